/**
 * The `lattice vss` admin subcommands: each names its route of vss.md "Admin HTTP API", the body
 * fields its flags set (kebab-case of the API's snake_case), and how its answer is shown. Nothing
 * here decides anything the API decides: bodies go as given and the API validates them.
 */
import { UsageError } from './cli-args.js';
import { type CommandContext, printJson, printLine, stringFlag } from './command-context.js';
import { followAccepted, shouldWait, waitForOperation } from './operation-flow.js';
import { bareOperation, describeOperation, type OperationView, readOperation } from './operation-view.js';
import { type BodyField, buildRequestBody, type JsonBody } from './request-input.js';
import {
  describeModel,
  describeReset,
  describeStore,
  describeVariant,
  modelsOf,
  modelsTable,
} from './resource-output.js';

export interface FlagHelp {
  flag: string;
  type: 'string' | 'boolean';
  /** The value placeholder in the usage (`ID`); none for booleans. */
  value?: string;
  help: string;
}

export interface Subcommand {
  name: string;
  /** What it does, first line of its usage and its line in the overview. */
  about: string;
  /** Body fields its flags set. */
  fields: readonly BodyField[];
  /** It sends a body: `--file` and `--idempotency-key` apply. */
  sendsBody: boolean;
  /** Its `--wait` default; undefined when it has no wait. */
  waitByDefault?: boolean;
  /** Its own flags beyond the fields and the common ones. */
  flags: readonly FlagHelp[];
  /** The name of its one positional argument, when it takes one. */
  positional?: string;
  run(context: CommandContext): Promise<number>;
}

const field = (name: string, kind: BodyField['kind'] = 'string', aliases?: string[]): BodyField => ({
  field: name,
  flag: name.replaceAll('_', '-'),
  kind,
  ...(aliases === undefined ? {} : { aliases }),
});

const ENTITY = field('entity');
/** `--model-name`, or `--model` for short (what the operations' usage shows). */
const MODEL_NAME = field('model_name', 'string', ['model']);
const VARIANT = field('variant');

const STORE_FIELDS = [
  field('store_id', 'integer'),
  ENTITY,
  field('db_conf_id'),
  field('embeddings_table'),
  field('aggregator_table'),
];
const MODEL_FIELDS = [
  ENTITY,
  MODEL_NAME,
  field('ingestion_column_mapping', 'json'),
  field('embedding_store_enabled', 'boolean'),
  field('embedding_store_ttl', 'integer'),
  field('mq_id', 'integer'),
  field('model_config', 'json'),
  field('store_id', 'integer'),
  field('training_data_path'),
];
const VARIANT_FIELDS = [
  ENTITY,
  MODEL_NAME,
  VARIANT,
  field('vss_filter', 'json'),
  field('vectordb_type'),
  field('vectordb_config', 'json'),
  field('job_frequency'),
];

/** POST with the request's Idempotency-Key; `body` undefined sends none (the retry route takes none). */
async function postBody(context: CommandContext, path: string, body: JsonBody | undefined): Promise<unknown> {
  return context.client.post(path, body, { idempotencyKey: stringFlag(context, 'idempotency-key') });
}

async function requestBody(context: CommandContext, fields: readonly BodyField[]): Promise<JsonBody> {
  return buildRequestBody(fields, context.flags, stringFlag(context, 'file'));
}

function acceptedOperation(body: unknown, route: string): OperationView {
  const operation = readOperation(body);
  if (operation === undefined) {
    throw new Error(`the admin API accepted ${route} without an operation_id: ${JSON.stringify(body)}`);
  }
  return operation;
}

/** POST a registration and show the resource. */
function registration(
  name: string,
  route: string,
  about: string,
  fields: readonly BodyField[],
  describe: (body: unknown) => string,
): Subcommand {
  return {
    name,
    about,
    fields,
    sendsBody: true,
    flags: [],
    async run(context) {
      const answer = await postBody(context, route, await requestBody(context, fields));
      if (context.json) printJson(context.io.stdout, answer);
      else printLine(context.io.stdout, describe(answer));
      return 0;
    },
  };
}

/** POST a request that runs as an operation, then follow it. */
function operationRequest(
  name: string,
  about: string,
  fields: readonly BodyField[],
  route: (body: JsonBody) => string,
  summary?: (answer: unknown, operation: OperationView) => string,
): Subcommand {
  return {
    name,
    about,
    fields,
    sendsBody: true,
    waitByDefault: true,
    flags: [],
    async run(context) {
      const body = await requestBody(context, fields);
      const path = route(body);
      const answer = await postBody(context, path, body);
      const operation = acceptedOperation(answer, path);
      return followAccepted(
        context,
        answer,
        operation,
        summary?.(answer, operation) ?? `Accepted: ${describeOperation(operation)}`,
        shouldWait(context, true),
      );
    },
  };
}

export const SUBCOMMANDS: readonly Subcommand[] = [
  registration(
    'register-store',
    '/register-store',
    'POST /register-store: the store of an entity (its embeddings and aggregator tables).',
    STORE_FIELDS,
    describeStore,
  ),
  registration(
    'register-model',
    '/register-model',
    'POST /register-model: a model (entity, model_name) with its ingestion and vector settings.',
    MODEL_FIELDS,
    describeModel,
  ),
  {
    ...registration(
      'register-variant',
      '/register-variant',
      'POST /register-variant: a variant of a model; on a model with data the API starts filling it.',
      VARIANT_FIELDS,
      describeVariant,
    ),
    waitByDefault: false,
    async run(context) {
      const answer = await postBody(context, '/register-variant', await requestBody(context, VARIANT_FIELDS));
      // A variant added to a model with data is filled by an operation the answer names.
      const fillId = (answer as { fill_operation_id?: unknown } | null)?.fill_operation_id;
      if (typeof fillId !== 'string') {
        if (context.json) printJson(context.io.stdout, answer);
        else printLine(context.io.stdout, describeVariant(answer));
        return 0;
      }
      const operation = bareOperation(fillId);
      const summary = `${describeVariant(answer)}\nFilling it from the embedding store: ${describeOperation(operation)}`;
      return followAccepted(context, answer, operation, summary, shouldWait(context, false));
    },
  },
  operationRequest(
    'reset',
    'POST /reset-model: a full ingestion into the next version, indexing, then an atomic flip (--model-type DELTA: into the current version, no flip).',
    [ENTITY, MODEL_NAME, field('frequency'), field('model_type')],
    () => '/reset-model',
    (answer, operation) => describeReset(answer, operation.operationId),
  ),
  operationRequest(
    'trigger',
    'POST /trigger-model-machine: starts indexing a variant whose version is ingested.',
    [ENTITY, MODEL_NAME, VARIANT],
    () => '/trigger-model-machine',
  ),
  operationRequest(
    'promote',
    'POST /promote-variant (with --variant) or /promote-model: copies to the production cluster and serves from it.',
    [ENTITY, MODEL_NAME, VARIANT],
    (body) => (body.variant === undefined ? '/promote-model' : '/promote-variant'),
  ),
  {
    name: 'retry',
    about: 'POST /operations/{id}/retry: resumes a FAILED operation at the step it failed in.',
    fields: [],
    sendsBody: false,
    waitByDefault: true,
    flags: [{ flag: 'idempotency-key', type: 'string', value: 'KEY', help: 'sent as Idempotency-Key' }],
    positional: 'operation-id',
    async run(context) {
      const id = context.positionals[0]!;
      const path = `/operations/${encodeURIComponent(id)}/retry`;
      const answer = await postBody(context, path, undefined);
      const operation = acceptedOperation(answer, path);
      const summary = `Retry accepted: ${describeOperation(operation)}`;
      return followAccepted(context, answer, operation, summary, shouldWait(context, true));
    },
  },
  {
    name: 'status',
    about: 'GET /operations/{id}: an operation’s status, step, progress and last error.',
    fields: [],
    sendsBody: false,
    waitByDefault: false,
    flags: [],
    positional: 'operation-id',
    async run(context) {
      const id = context.positionals[0]!;
      if (shouldWait(context, false)) return waitForOperation(context, id);
      const answer = await context.client.get(`/operations/${encodeURIComponent(id)}`);
      if (context.json) {
        printJson(context.io.stdout, answer);
        return 0;
      }
      const operation = acceptedOperation(answer, `GET /operations/${id}`);
      const { stdout } = context.io;
      printLine(stdout, describeOperation(operation));
      if (operation.rowsPublished !== undefined) {
        printLine(stdout, `  rows published: ${operation.rowsPublished.toLocaleString('en-US')}`);
      }
      if (operation.badRowCount !== undefined && operation.badRowCount > 0) {
        printLine(
          stdout,
          `  bad rows: ${operation.badRowCount.toLocaleString('en-US')} (the operation's result lists them: --json)`,
        );
      }
      if (operation.lastError !== undefined) printLine(stdout, `  last error: ${operation.lastError}`);
      return 0;
    },
  },
  {
    name: 'models',
    about: 'GET /models, or GET /models/{entity}/{model}: state, cluster and versions per variant.',
    fields: [],
    sendsBody: false,
    flags: [
      {
        flag: 'entity',
        type: 'string',
        value: 'E',
        help: 'with --model: that model only (and its versions)',
      },
      { flag: 'model', type: 'string', value: 'M', help: 'the model name (also --model-name)' },
      { flag: 'model-name', type: 'string', value: 'M', help: 'same as --model' },
    ],
    async run(context) {
      const entity = stringFlag(context, 'entity');
      const model = stringFlag(context, 'model') ?? stringFlag(context, 'model-name');
      if ((entity === undefined) !== (model === undefined)) {
        throw new UsageError('--entity and --model go together (one model), or neither (every model)');
      }
      const path =
        entity === undefined || model === undefined
          ? '/models'
          : `/models/${encodeURIComponent(entity)}/${encodeURIComponent(model)}`;
      const answer = await context.client.get(path);
      if (context.json) printJson(context.io.stdout, answer);
      else printLine(context.io.stdout, modelsTable(modelsOf(answer), entity !== undefined));
      return 0;
    },
  },
];
