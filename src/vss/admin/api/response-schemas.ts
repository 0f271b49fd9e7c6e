/**
 * JSON schemas of the admin API's responses. Shared shapes are registered once by `$id`
 * (`addResponseSchemas`) and referenced as `{ $ref: '<Id>#' }`, so the OpenAPI document lists
 * them under `components.schemas` by the same names. Field names are snake_case as in vss.md.
 */
import type { FastifyInstance } from 'fastify';
import {
  CLUSTERS,
  JOB_FREQUENCIES,
  MODEL_STATES,
  OPERATION_KINDS,
  OPERATION_STATUSES,
  VARIANT_STATES,
  VECTOR_DB_TYPES,
  VERSION_STATUSES,
} from '../../store/index.js';
import { ingestionColumnMappingSchema, modelConfigSchema } from './request-schemas.js';

const date = { type: 'string', format: 'date-time' } as const;
const nullableDate = { type: ['string', 'null'], format: 'date-time' } as const;
const nullableText = { type: ['string', 'null'] } as const;
const nullableVersion = { type: ['integer', 'null'] } as const;
const anyObject = { type: 'object', additionalProperties: true } as const;

/** `{ "error": { "code", "message", "field" } }`: every 4xx and 5xx of the API. */
const errorBody = {
  $id: 'ErrorBody',
  type: 'object',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'A Lattice error code (INVALID_ARGUMENT, NOT_FOUND, …).' },
        message: { type: 'string' },
        field: { type: 'string', description: 'The request field (or header) the error is about.' },
      },
    },
  },
} as const;

const store = {
  $id: 'Store',
  type: 'object',
  additionalProperties: false,
  required: ['store_id', 'entity', 'db_conf_id', 'embeddings_table', 'aggregator_table', 'created_at'],
  properties: {
    store_id: { type: 'integer' },
    entity: { type: 'string' },
    db_conf_id: { type: 'string' },
    embeddings_table: { type: 'string' },
    aggregator_table: { type: 'string' },
    created_at: date,
  },
} as const;

const modelProperties = {
  entity: { type: 'string' },
  model_name: { type: 'string' },
  store_id: { type: 'integer' },
  ingestion_column_mapping: ingestionColumnMappingSchema,
  embedding_store_enabled: { type: 'boolean' },
  embedding_store_ttl: { type: 'integer' },
  mq_id: { type: 'integer' },
  model_config: modelConfigSchema,
  training_data_path: { type: 'string' },
  state: { type: 'string', enum: [...MODEL_STATES] },
  failed_state: { type: ['string', 'null'], enum: [...MODEL_STATES, null] },
  failure_reason: nullableText,
  cluster: { type: 'string', enum: [...CLUSTERS] },
  created_at: date,
  updated_at: date,
} as const;
const modelRequired = Object.keys(modelProperties);

const model = {
  $id: 'Model',
  type: 'object',
  additionalProperties: false,
  required: modelRequired,
  properties: modelProperties,
} as const;

const versionCounts = {
  $id: 'VersionCounts',
  type: 'object',
  additionalProperties: false,
  description: 'Counts of one model version (the versions table).',
  required: ['version', 'status', 'ingested_count', 'failed_count', 'indexed_count'],
  properties: {
    version: { type: 'integer' },
    status: { type: 'string', enum: [...VERSION_STATUSES] },
    ingested_count: { type: 'integer' },
    failed_count: { type: 'integer' },
    indexed_count: nullableVersion,
  },
} as const;

const variant = {
  $id: 'Variant',
  type: 'object',
  additionalProperties: false,
  required: [
    'entity',
    'model_name',
    'variant',
    'vss_filter',
    'vectordb_type',
    'vectordb_config',
    'job_frequency',
    'cache',
    'state',
    'failed_state',
    'failure_reason',
    'read_version',
    'write_version',
    'cluster',
    'created_at',
    'updated_at',
  ],
  properties: {
    entity: { type: 'string' },
    model_name: { type: 'string' },
    variant: { type: 'string' },
    vss_filter: anyObject,
    vectordb_type: { type: 'string', enum: [...VECTOR_DB_TYPES] },
    vectordb_config: anyObject,
    job_frequency: { type: 'string', enum: [...JOB_FREQUENCIES] },
    cache: {
      type: 'object',
      additionalProperties: false,
      required: ['memory_ttl', 'distributed_ttl', 'ttl_jitter'],
      properties: {
        memory_ttl: { type: 'integer' },
        distributed_ttl: { type: 'integer' },
        ttl_jitter: { type: 'number' },
      },
    },
    state: { type: 'string', enum: [...VARIANT_STATES] },
    failed_state: { type: ['string', 'null'], enum: [...VARIANT_STATES, null] },
    failure_reason: nullableText,
    read_version: nullableVersion,
    write_version: nullableVersion,
    cluster: { type: 'string', enum: [...CLUSTERS] },
    created_at: date,
    updated_at: date,
    read_counts: {
      description: "The read version's counts (listings only); null before the first version is served.",
      anyOf: [{ $ref: 'VersionCounts#' }, { type: 'null' }],
    },
    write_counts: {
      description: "The write version's counts (listings only); null before the first reset.",
      anyOf: [{ $ref: 'VersionCounts#' }, { type: 'null' }],
    },
    served_index: {
      description:
        'READY variants in listings: the collection it serves, its points and indexed points; degraded when fewer than 95 % are indexed (searches are slower or miss the unindexed points until the index is rebuilt).',
      type: 'object',
      additionalProperties: false,
      required: ['points', 'indexed_points', 'degraded'],
      properties: {
        points: { type: 'integer' },
        indexed_points: { type: 'integer' },
        degraded: { type: 'boolean' },
      },
    },
    fill_operation_id: {
      type: 'string',
      description:
        'register-variant only: the FILL_VARIANT operation started because the model already has data.',
    },
  },
} as const;

const version = {
  $id: 'Version',
  type: 'object',
  additionalProperties: false,
  required: [
    'version',
    'status',
    'failure_reason',
    'ingested_count',
    'failed_count',
    'indexed_count',
    'created_at',
    'ingested_at',
    'indexed_at',
    'retired_at',
    'updated_at',
  ],
  properties: {
    version: { type: 'integer' },
    status: { type: 'string', enum: [...VERSION_STATUSES] },
    failure_reason: nullableText,
    ingested_count: { type: 'integer' },
    failed_count: { type: 'integer' },
    indexed_count: nullableVersion,
    created_at: date,
    ingested_at: nullableDate,
    indexed_at: nullableDate,
    retired_at: nullableDate,
    updated_at: date,
  },
} as const;

const operation = {
  $id: 'Operation',
  type: 'object',
  additionalProperties: false,
  required: [
    'operation_id',
    'kind',
    'entity',
    'model_name',
    'variant',
    'status',
    'step',
    'progress',
    'attempts',
    'last_error',
    'result',
    'payload',
    'created_at',
    'updated_at',
    'started_at',
    'finished_at',
  ],
  properties: {
    operation_id: { type: 'string' },
    kind: { type: 'string', enum: [...OPERATION_KINDS] },
    entity: { type: 'string' },
    model_name: { type: 'string' },
    variant: nullableText,
    status: { type: 'string', enum: [...OPERATION_STATUSES] },
    step: { ...nullableText, description: 'The state-machine step it is at.' },
    progress: { type: 'number', minimum: 0, maximum: 1 },
    attempts: { type: 'integer' },
    last_error: nullableText,
    result: { type: ['object', 'null'], additionalProperties: true },
    payload: {
      ...anyObject,
      description: "The operation's request and what its steps record (job progress, bad rows).",
    },
    created_at: date,
    updated_at: date,
    started_at: nullableDate,
    finished_at: nullableDate,
  },
} as const;

const operationAcceptedProperties = {
  operation_id: { type: 'string' },
  status: { type: 'string', enum: [...OPERATION_STATUSES] },
  created: {
    type: 'boolean',
    description: 'False when an earlier request with the same Idempotency-Key recorded it.',
  },
} as const;

const operationAccepted = {
  $id: 'OperationAccepted',
  type: 'object',
  additionalProperties: false,
  required: ['operation_id', 'status', 'created'],
  properties: operationAcceptedProperties,
} as const;

const resetAccepted = {
  $id: 'ResetAccepted',
  type: 'object',
  additionalProperties: false,
  required: [
    'operation_id',
    'status',
    'created',
    'variant_version_map',
    'mq_id',
    'training_data_path',
    'version',
  ],
  properties: {
    ...operationAcceptedProperties,
    variant_version_map: {
      type: 'object',
      additionalProperties: { type: 'integer' },
      description: 'Each variant → the version its points are written to.',
    },
    mq_id: { type: 'integer' },
    training_data_path: { type: 'string' },
    version: { type: 'integer', description: 'The version the reset fills.' },
  },
} as const;

const modelWithVariants = {
  $id: 'ModelWithVariants',
  type: 'object',
  additionalProperties: false,
  required: [...modelRequired, 'variants'],
  properties: { ...modelProperties, variants: { type: 'array', items: { $ref: 'Variant#' } } },
} as const;

const modelDetail = {
  $id: 'ModelDetail',
  type: 'object',
  additionalProperties: false,
  required: [...modelRequired, 'variants', 'versions', 'operations'],
  properties: {
    ...modelProperties,
    variants: { type: 'array', items: { $ref: 'Variant#' } },
    versions: { type: 'array', items: { $ref: 'Version#' }, description: 'Newest first.' },
    operations: {
      type: 'array',
      items: { $ref: 'Operation#' },
      description: 'The most recent, newest first.',
    },
  },
} as const;

const modelList = {
  $id: 'ModelList',
  type: 'object',
  additionalProperties: false,
  required: ['models'],
  properties: { models: { type: 'array', items: { $ref: 'ModelWithVariants#' } } },
} as const;

const health = {
  $id: 'Health',
  type: 'object',
  additionalProperties: false,
  required: ['status', 'service'],
  properties: { status: { type: 'string' }, service: { type: 'string' } },
} as const;

const readiness = {
  $id: 'Readiness',
  type: 'object',
  additionalProperties: false,
  required: ['status', 'checks'],
  properties: {
    status: { type: 'string', enum: ['ready', 'not ready'] },
    checks: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Each check → "ok" or why it failed.',
    },
  },
} as const;

const shared = [
  errorBody,
  store,
  model,
  versionCounts,
  variant,
  version,
  operation,
  operationAccepted,
  resetAccepted,
  modelWithVariants,
  modelDetail,
  modelList,
  health,
  readiness,
];

/** Registers the shared shapes on the app (before the routes that reference them). */
export function addResponseSchemas(app: FastifyInstance): void {
  for (const schema of shared) app.addSchema(schema);
}

/** `{ $ref }` to a shared shape. */
export const ref = (id: (typeof shared)[number]['$id']) => ({ $ref: `${id}#` });

/** The error responses a route can give (`'5xx'`: any server fault), each the error body. */
export function errorResponses(...statuses: Array<number | '5xx'>): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const status of statuses) responses[String(status)] = ref('ErrorBody');
  return responses;
}
