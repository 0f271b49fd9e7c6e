/**
 * A small Fastify server that stands in for the vss admin HTTP API (vss.md "Admin HTTP API") in the
 * CLI client tests, while the real one (src/vss/admin/api, buildAdminApi) is being built; an
 * end-to-end test of the CLI against the real API comes with it. It keeps the contract's shapes:
 * snake_case bodies, `{ "error": { "code", "message", "field" } }` with 400/401/404/409, 202 with
 * `operation_id` for operations, and operations that advance one step per `GET /operations/{id}`:
 * RUNNING through INGESTING and INDEXING to SUCCEEDED, or to FAILED for the model `failing`, or
 * never ending for the model `endless`.
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

interface StandInOperation {
  operation_id: string;
  kind: string;
  entity: string;
  model_name: string;
  variant: string | null;
  /** Index into the script below; advanced by each GET. */
  at: number;
  script: readonly Partial<OperationFields>[];
}

interface OperationFields {
  status: string;
  step: string | null;
  progress: number;
  last_error: string | null;
  result: Record<string, unknown> | null;
}

const SUCCEEDING: readonly Partial<OperationFields>[] = [
  { status: 'PENDING', step: null, progress: 0 },
  { status: 'RUNNING', step: 'INGESTING', progress: 0.25, result: { job: { rows_published: 1200 } } },
  { status: 'RUNNING', step: 'INGESTING', progress: 0.5, result: { job: { rows_published: 2400 } } },
  {
    status: 'RUNNING',
    step: 'INDEXING',
    progress: 0.8,
    result: { job: { rows_published: 4800, bad_row_count: 3 } },
  },
  {
    status: 'SUCCEEDED',
    step: 'DONE',
    progress: 1,
    result: { job: { rows_published: 4800, bad_row_count: 3 } },
  },
];
const FAILING: readonly Partial<OperationFields>[] = [
  { status: 'RUNNING', step: 'INGESTING', progress: 0.1 },
  { status: 'FAILED', step: 'INGESTING', progress: 0.1, last_error: 'training data not found: /data/nope' },
];
const ENDLESS: readonly Partial<OperationFields>[] = [
  { status: 'RUNNING', step: 'INGESTING', progress: 0.4 },
];

type Body = Record<string, unknown>;

export class AdminApiStandIn {
  readonly requests: RecordedRequest[] = [];
  readonly operations = new Map<string, StandInOperation>();
  /** When set, every request must carry `Authorization: Bearer <apiKey>`. */
  apiKey: string | undefined;
  #app: FastifyInstance | undefined;
  #next = 1;
  readonly #byIdempotencyKey = new Map<string, string>();
  url = '';

  async start(): Promise<void> {
    const app = Fastify();
    app.addHook('onRequest', async (request, reply) => {
      this.requests.push({
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: undefined,
      });
      if (this.apiKey !== undefined && request.headers.authorization !== `Bearer ${this.apiKey}`) {
        return error(reply, 401, 'UNAUTHENTICATED', 'a valid API key is required (Authorization: Bearer)');
      }
    });
    app.addHook('preHandler', async (request) => {
      this.requests.at(-1)!.body = request.body;
    });
    app.post<{ Body: Body }>('/register-store', async (request, reply) => {
      const body = request.body;
      if (typeof body.store_id !== 'number') {
        return error(reply, 400, 'INVALID_ARGUMENT', 'store_id must be an integer', 'store_id');
      }
      if (typeof body.entity !== 'string')
        return error(reply, 400, 'INVALID_ARGUMENT', 'entity is required', 'entity');
      return reply.status(201).send({ ...body, created_at: new Date().toISOString() });
    });
    app.post<{ Body: Body }>('/register-model', async (request, reply) => {
      const body = request.body;
      if (body.model_name === 'taken') {
        return error(reply, 409, 'ALREADY_EXISTS', 'model catalog/taken exists with another body');
      }
      return reply.status(201).send({ ...body, state: 'REGISTERED', cluster: 'experiment' });
    });
    app.post<{ Body: Body }>('/register-variant', async (request, reply) => {
      const body = request.body;
      const answer: Body = { ...body, state: 'REGISTERED', cluster: 'experiment', read_version: null };
      if (body.model_name === 'with-data')
        answer.fill_operation_id = this.#operation('FILL_VARIANT', body, SUCCEEDING);
      return reply.status(201).send(answer);
    });
    app.post<{ Body: Body }>('/reset-model', async (request, reply) => {
      const body = request.body;
      if (body.entity === undefined)
        return error(reply, 400, 'INVALID_ARGUMENT', 'entity is required', 'entity');
      if (body.model_name === 'busy') {
        return error(
          reply,
          409,
          'FAILED_PRECONDITION',
          'a reset of catalog/busy is running (operation op-0)',
        );
      }
      const key = request.headers['idempotency-key'];
      const earlier = typeof key === 'string' ? this.#byIdempotencyKey.get(key) : undefined;
      const script =
        body.model_name === 'failing' ? FAILING : body.model_name === 'endless' ? ENDLESS : SUCCEEDING;
      const id = earlier ?? this.#operation('RESET_MODEL', body, script);
      if (typeof key === 'string') this.#byIdempotencyKey.set(key, id);
      return reply.status(202).send({
        operation_id: id,
        status: 'PENDING',
        created: earlier === undefined,
        variant_version_map: { organic: 2, ads: 2 },
        mq_id: 1,
        training_data_path: '/data/catalog',
        version: 2,
      });
    });
    for (const [route, kind] of [
      ['/trigger-model-machine', 'TRIGGER_MODEL_MACHINE'],
      ['/promote-model', 'PROMOTE_MODEL'],
      ['/promote-variant', 'PROMOTE_VARIANT'],
    ] as const) {
      app.post<{ Body: Body }>(route, async (request, reply) => {
        const id = this.#operation(
          kind,
          request.body,
          request.body.model_name === 'failing' ? FAILING : SUCCEEDING,
        );
        return reply.status(202).send({ operation_id: id, status: 'PENDING', created: true });
      });
    }
    app.post<{ Params: { id: string } }>('/operations/:id/retry', async (request, reply) => {
      const operation = this.operations.get(request.params.id);
      if (operation === undefined) return notFound(reply, request.params.id);
      if (operation.script[operation.at]?.status !== 'FAILED') {
        return error(reply, 409, 'FAILED_PRECONDITION', `operation ${operation.operation_id} has not failed`);
      }
      operation.script = SUCCEEDING.slice(1);
      operation.at = 0;
      return reply
        .status(202)
        .send({ operation_id: operation.operation_id, status: 'RUNNING', created: false });
    });
    app.get<{ Params: { id: string } }>('/operations/:id', async (request, reply) => {
      const operation = this.operations.get(request.params.id);
      if (operation === undefined) return notFound(reply, request.params.id);
      const fields = { ...operation.script[operation.at]! };
      operation.at = Math.min(operation.at + 1, operation.script.length - 1);
      return {
        operation_id: operation.operation_id,
        kind: operation.kind,
        entity: operation.entity,
        model_name: operation.model_name,
        variant: operation.variant,
        step: null,
        progress: 0,
        last_error: null,
        result: null,
        attempts: 1,
        ...fields,
      };
    });
    app.get('/models', async () => ({ models: [MODEL] }));
    app.get<{ Params: { entity: string; model: string } }>(
      '/models/:entity/:model',
      async (request, reply) => {
        if (request.params.model !== MODEL.model_name) {
          return error(
            reply,
            404,
            'NOT_FOUND',
            `model ${request.params.entity}/${request.params.model} does not exist`,
          );
        }
        return {
          ...MODEL,
          versions: [
            { version: 2, status: 'SERVING', ingested_count: 4800, failed_count: 0, indexed_count: 4790 },
          ],
          operations: [
            {
              operation_id: 'op-9',
              kind: 'RESET_MODEL',
              variant: null,
              status: 'SUCCEEDED',
              step: 'DONE',
              progress: 1,
            },
          ],
        };
      },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    this.url = `http://127.0.0.1:${address.port}`;
    this.#app = app;
  }

  async stop(): Promise<void> {
    await this.#app?.close();
  }

  /** The requests to `url` (path and query), in order. */
  requestsTo(url: string): RecordedRequest[] {
    return this.requests.filter((r) => r.url === url);
  }

  #operation(kind: string, body: Body, script: readonly Partial<OperationFields>[]): string {
    const id = `op-${this.#next++}`;
    this.operations.set(id, {
      operation_id: id,
      kind,
      entity: String(body.entity),
      model_name: String(body.model_name),
      variant: typeof body.variant === 'string' ? body.variant : null,
      at: 0,
      script,
    });
    return id;
  }
}

const MODEL = {
  entity: 'catalog',
  model_name: 'products',
  state: 'READY',
  cluster: 'experiment',
  failure_reason: null,
  variants: [
    {
      variant: 'organic',
      state: 'READY',
      cluster: 'experiment',
      read_version: 2,
      write_version: 2,
      failure_reason: null,
    },
    {
      variant: 'ads',
      state: 'FAILED',
      cluster: 'production',
      read_version: 1,
      write_version: 2,
      failure_reason: 'indexing timed out',
    },
  ],
};

function error(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  field?: string,
): FastifyReply {
  return reply.status(status).send({ error: { code, message, ...(field === undefined ? {} : { field }) } });
}

function notFound(reply: FastifyReply, id: string): FastifyReply {
  return error(reply, 404, 'NOT_FOUND', `operation ${id} does not exist`, 'operation_id');
}
