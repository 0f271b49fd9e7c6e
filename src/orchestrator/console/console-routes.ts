/**
 * The model config API of the console, on the ops HTTP server of a process that runs the
 * orchestrator (`lattice up`, `lattice orchestrator`), under `/api/v1/models`: configs with their
 * state and history, validation, changes with who and why, the DAG, live traffic and example
 * requests (docs/orchestrator.md "Console API"). The ops server authenticates `/api/` and names the
 * caller (api-auth.ts), who becomes the author of each change.
 *
 * The routes are registered before the ops server listens and answer 503 until the orchestrator
 * has started and `serve` was called, as `GET /models` does.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LatticeError } from '../../platform/errors.js';
import { apiCallerOf, toHttpError } from '../../platform/http/index.js';
import { ModelConfigError } from '../config/index.js';
import {
  changeResult,
  cloneBody,
  dagAnswer,
  deleteQuery,
  errorBody,
  exampleQuery,
  idParams,
  jsonSchema,
  modelDetail,
  modelList,
  predictRequestJson,
  putBody,
  revisionList,
  rollbackBody,
  statsAnswer,
  validateBody,
  validation,
} from './console-schemas.js';
import type { ExamplePattern } from './example-request.js';
import type { ModelConsole } from './model-console.js';
import { shadowFiguresAnswer, shadowParams } from './shadow-schemas.js';

export const MODELS_API = '/api/v1/models';
const TAGS = ['model configs'];

/** The header of an example answer saying where each id column's values came from. */
export const EXAMPLE_IDS_HEADER = 'x-lattice-example-ids';

interface Id {
  Params: { id: string };
}

const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, jsonSchema(errorBody, 'output')]));

export function registerModelConsoleRoutes(app: FastifyInstance): { serve(console: ModelConsole): void } {
  let source: ModelConsole | undefined;
  const consoleOf = (): ModelConsole => {
    if (source === undefined) throw new LatticeError('UNAVAILABLE', 'the orchestrator has not started yet');
    return source;
  };
  const author = (request: FastifyRequest) => apiCallerOf(request).name;
  const params = jsonSchema(idParams, 'input');

  void app.register(async (scope) => {
    // A document refused by validation answers 400 with every problem at its JSON path.
    scope.setErrorHandler(async (err, _request, reply: FastifyReply) => {
      if (!(err instanceof ModelConfigError)) throw err;
      const { status, body } = toHttpError(err);
      return reply.status(status).send({ error: { ...body.error, problems: err.problems } });
    });

    scope.get(
      MODELS_API,
      {
        schema: {
          summary: 'Every model config with its state, serving version and revision count',
          tags: TAGS,
          response: { 200: jsonSchema(modelList, 'output'), ...errors(503) },
        },
      },
      async () => ({ models: await consoleOf().configs.list() }),
    );

    scope.get(
      `${MODELS_API}/stats`,
      {
        schema: {
          summary:
            'Request rate, error rate and p50/p99 latency per model and component over the last minute',
          tags: TAGS,
          response: { 200: jsonSchema(statsAnswer, 'output'), ...errors(503) },
        },
      },
      async () => consoleOf().stats(),
    );

    scope.post<{ Body: { document: unknown; model_config_id?: string } }>(
      `${MODELS_API}/validate`,
      {
        schema: {
          summary: "Validates a document with the orchestrator's own validator (always 200)",
          tags: TAGS,
          body: jsonSchema(validateBody, 'input'),
          response: { 200: jsonSchema(validation, 'output'), ...errors(400, 503) },
        },
      },
      async (request) => consoleOf().configs.validate(request.body.document, request.body.model_config_id),
    );

    scope.get<Id>(
      `${MODELS_API}/:id`,
      {
        schema: {
          summary: 'One model config: the stored and the serving document, its state and newest revision',
          tags: TAGS,
          params,
          response: { 200: jsonSchema(modelDetail, 'output'), ...errors(404, 503) },
        },
      },
      async (request) => consoleOf().configs.get(request.params.id),
    );

    scope.get<{ Params: { id: string; shadow: string } }>(
      `${MODELS_API}/:id/shadows/:shadow`,
      {
        schema: {
          summary:
            'How a shadow config\'s answers compare with the primary\'s (docs/orchestrator.md "Shadow configs")',
          tags: TAGS,
          params: jsonSchema(shadowParams, 'input'),
          response: { 200: jsonSchema(shadowFiguresAnswer, 'output'), ...errors(404, 503) },
        },
      },
      async (request) => consoleOf().shadow(request.params.id, request.params.shadow),
    );

    scope.get<Id>(
      `${MODELS_API}/:id/revisions`,
      {
        schema: {
          summary: 'The recorded revisions of a model config, newest first, with who, when and why',
          tags: TAGS,
          params,
          response: { 200: jsonSchema(revisionList, 'output'), ...errors(404, 503) },
        },
      },
      async (request) => ({ revisions: await consoleOf().configs.revisions(request.params.id) }),
    );

    scope.get<Id>(
      `${MODELS_API}/:id/dag`,
      {
        schema: {
          summary:
            'The DAG of the serving version: components by kind with their columns, deadlines and endpoints',
          tags: TAGS,
          params,
          response: { 200: jsonSchema(dagAnswer, 'output'), ...errors(404, 503) },
        },
      },
      async (request) => consoleOf().dag(request.params.id),
    );

    scope.get<Id & { Querystring: { pattern: ExamplePattern } }>(
      `${MODELS_API}/:id/example`,
      {
        schema: {
          summary:
            'An example PredictRequest (proto3 JSON mapping) from the feature schema, with ids found in the feature store',
          description: `The ${EXAMPLE_IDS_HEADER} header says, per id column, whether its ids were found in the feature store or made up.`,
          tags: TAGS,
          params,
          querystring: jsonSchema(exampleQuery, 'input'),
          response: { 200: jsonSchema(predictRequestJson, 'output'), ...errors(400, 404, 503) },
        },
      },
      async (request, reply) => {
        const { request: example, ids } = await consoleOf().example(request.params.id, request.query.pattern);
        reply.header(
          EXAMPLE_IDS_HEADER,
          Object.entries(ids)
            .map(([column, from]) => `${column}=${from}`)
            .join('; '),
        );
        return example;
      },
    );

    scope.put<Id & { Body: { document: unknown; comment: string; expected_revision?: number } }>(
      `${MODELS_API}/:id`,
      {
        schema: {
          summary:
            'Validates and writes a model config as a new revision (400 with every problem when invalid)',
          tags: TAGS,
          params,
          body: jsonSchema(putBody, 'input'),
          response: { 200: jsonSchema(changeResult, 'output'), ...errors(400, 409, 503) },
        },
      },
      async (request) =>
        consoleOf().configs.apply(request.params.id, request.body.document, {
          author: author(request),
          comment: request.body.comment,
          expectedRevision: request.body.expected_revision,
        }),
    );

    scope.post<Id & { Body: { new_id: string; comment: string } }>(
      `${MODELS_API}/:id/clone`,
      {
        schema: {
          summary: 'Copies the stored document of a model config under a new id',
          tags: TAGS,
          params,
          body: jsonSchema(cloneBody, 'input'),
          response: { 200: jsonSchema(changeResult, 'output'), ...errors(400, 404, 409, 503) },
        },
      },
      async (request) =>
        consoleOf().configs.clone(request.params.id, request.body.new_id, {
          author: author(request),
          comment: request.body.comment,
        }),
    );

    scope.post<Id & { Body: { revision: number; comment: string; expected_revision?: number } }>(
      `${MODELS_API}/:id/rollback`,
      {
        schema: {
          summary: "Writes an earlier revision's document as a new revision",
          tags: TAGS,
          params,
          body: jsonSchema(rollbackBody, 'input'),
          response: { 200: jsonSchema(changeResult, 'output'), ...errors(400, 404, 409, 503) },
        },
      },
      async (request) =>
        consoleOf().configs.rollback(request.params.id, request.body.revision, {
          author: author(request),
          comment: request.body.comment,
          expectedRevision: request.body.expected_revision,
        }),
    );

    scope.delete<Id & { Querystring: { comment?: string; expected_revision?: number } }>(
      `${MODELS_API}/:id`,
      {
        schema: {
          summary: 'Removes a model config (it stops serving; its history stays for a rollback)',
          tags: TAGS,
          params,
          querystring: jsonSchema(deleteQuery, 'input'),
          response: { 200: jsonSchema(changeResult, 'output'), ...errors(404, 409, 503) },
        },
      },
      async (request) => {
        const body = (request.body ?? {}) as { comment?: unknown; expected_revision?: unknown };
        const comment = typeof body.comment === 'string' ? body.comment : request.query.comment;
        const expected =
          typeof body.expected_revision === 'number'
            ? body.expected_revision
            : request.query.expected_revision;
        return consoleOf().configs.remove(request.params.id, {
          author: author(request),
          comment: comment ?? '',
          expectedRevision: expected,
        });
      },
    );
  });

  return {
    serve(console) {
      source = console;
    },
  };
}
