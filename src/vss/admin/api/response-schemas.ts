/**
 * The admin API's responses as zod schemas, turned into the JSON Schema Fastify serializes with and
 * the OpenAPI document shows (json-schema.ts). Shared shapes are registered once by name
 * (`addResponseSchemas`) and referenced as `{ $ref: '<Name>#' }`, so the OpenAPI document lists them
 * under `components.schemas` by the same names. Field names are snake_case as in vss.md.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
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
import { sharedJsonSchemas } from './json-schema.js';
import { ingestionColumnMapping, modelConfig } from './request-schemas.js';

const date = z.string().meta({ format: 'date-time' });
const nullableDate = date.nullable();
const nullableText = z.string().nullable();
const nullableVersion = z.int().nullable();
const anyObject = z.looseObject({});

/** `{ "error": { "code", "message", "field" } }`: every 4xx and 5xx of the API. */
const errorBody = z.strictObject({
  error: z.strictObject({
    code: z.string().describe('A Lattice error code (INVALID_ARGUMENT, NOT_FOUND, …).'),
    message: z.string(),
    field: z.string().describe('The request field (or header) the error is about.').optional(),
  }),
});

const store = z.strictObject({
  store_id: z.int(),
  entity: z.string(),
  db_conf_id: z.string(),
  embeddings_table: z.string(),
  aggregator_table: z.string(),
  created_at: date,
});

const modelFields = {
  entity: z.string(),
  model_name: z.string(),
  store_id: z.int(),
  ingestion_column_mapping: ingestionColumnMapping,
  embedding_store_enabled: z.boolean(),
  embedding_store_ttl: z.int(),
  mq_id: z.int(),
  model_config: modelConfig,
  training_data_path: z.string(),
  state: z.enum(MODEL_STATES),
  failed_state: z.enum(MODEL_STATES).nullable(),
  failure_reason: nullableText,
  cluster: z.enum(CLUSTERS),
  created_at: date,
  updated_at: date,
};

const model = z.strictObject(modelFields);

const versionCounts = z
  .strictObject({
    version: z.int(),
    status: z.enum(VERSION_STATUSES),
    ingested_count: z.int(),
    failed_count: z.int(),
    indexed_count: nullableVersion,
  })
  .describe('Counts of one model version (the versions table).');

const variant = z.strictObject({
  entity: z.string(),
  model_name: z.string(),
  variant: z.string(),
  vss_filter: anyObject,
  vectordb_type: z.enum(VECTOR_DB_TYPES),
  vectordb_config: anyObject,
  job_frequency: z.enum(JOB_FREQUENCIES),
  cache: z.strictObject({ memory_ttl: z.int(), distributed_ttl: z.int(), ttl_jitter: z.number() }),
  state: z.enum(VARIANT_STATES),
  failed_state: z.enum(VARIANT_STATES).nullable(),
  failure_reason: nullableText,
  read_version: nullableVersion,
  write_version: nullableVersion,
  min_recall: z
    .number()
    .min(0)
    .max(1)
    .describe(
      "Recall@k a reset's new version must reach in every filter-selectivity bucket before the variant is flipped to it.",
    ),
  previous_read_version: nullableVersion.describe(
    'The version served before the last flip: where rollback-model goes back to (null after a rollback).',
  ),
  cluster: z.enum(CLUSTERS),
  ef_search: z
    .int()
    .describe(
      "HNSW width of the variant's searches now: as set by update-variant, else its vectordb_config's ef_search, else the vector DB's default.",
    ),
  created_at: date,
  updated_at: date,
  rollback: z
    .strictObject({
      available: z
        .boolean()
        .describe('rollback-model would take this variant back to previous_read_version now.'),
      until: nullableDate.describe(
        'The end of the previous version’s grace period; null when there is none (another variant serves it) or no rollback.',
      ),
    })
    .describe('Listings only: the rollback window of a READY variant.')
    .optional(),
  read_counts: versionCounts
    .nullable()
    .describe("The read version's counts (listings only); null before the first version is served.")
    .optional(),
  write_counts: versionCounts
    .nullable()
    .describe("The write version's counts (listings only); null before the first reset.")
    .optional(),
  served_index: z
    .strictObject({ points: z.int(), indexed_points: z.int(), degraded: z.boolean() })
    .describe(
      'READY variants in listings: the collection it serves, its points and indexed points; degraded when fewer than 95 % are indexed (searches are slower or miss the unindexed points until the index is rebuilt).',
    )
    .optional(),
  fill_operation_id: z
    .string()
    .describe('register-variant only: the FILL_VARIANT operation started because the model already has data.')
    .optional(),
});

const version = z.strictObject({
  version: z.int(),
  status: z.enum(VERSION_STATUSES),
  failure_reason: nullableText,
  ingested_count: z.int(),
  failed_count: z.int(),
  indexed_count: nullableVersion,
  created_at: date,
  ingested_at: nullableDate,
  indexed_at: nullableDate,
  retired_at: nullableDate,
  recall: anyObject
    .nullable()
    .describe(
      "What the reset's verify_recall step measured: k, sample_size, passed, and per variant its min_recall, passed and recall per filter-selectivity bucket (under_1pct, 1_to_10pct, over_10pct: queries, recall).",
    ),
  rolled_back_at: nullableDate.describe('When rollback-model took this version out of service.'),
  updated_at: date,
});

const operation = z.strictObject({
  operation_id: z.string(),
  kind: z.enum(OPERATION_KINDS),
  entity: z.string(),
  model_name: z.string(),
  variant: nullableText,
  status: z.enum(OPERATION_STATUSES),
  step: nullableText.describe('The state-machine step it is at.'),
  progress: z.number().min(0).max(1),
  attempts: z.int(),
  last_error: nullableText,
  result: anyObject.nullable(),
  payload: anyObject.describe("The operation's request and what its steps record (job progress, bad rows)."),
  created_at: date,
  updated_at: date,
  started_at: nullableDate,
  finished_at: nullableDate,
});

const operationAccepted = z.strictObject({
  operation_id: z.string(),
  status: z.enum(OPERATION_STATUSES),
  created: z.boolean().describe('False when an earlier request with the same Idempotency-Key recorded it.'),
});

const resetAccepted = operationAccepted.extend({
  variant_version_map: z
    .record(z.string(), z.int())
    .describe('Each variant → the version its points are written to.'),
  mq_id: z.int(),
  training_data_path: z.string(),
  version: z.int().describe('The version the reset fills.'),
});

const rollbackDone = z.strictObject({
  entity: z.string(),
  model_name: z.string(),
  variants: z
    .array(z.strictObject({ variant: z.string(), from_version: z.int(), to_version: z.int() }))
    .describe('Each variant rolled back: the version it served and the one it serves now.'),
  retired_versions: z
    .array(z.int())
    .describe('Versions left without readers (RETIRED, rolled_back_at set; dropped after the grace period).'),
});

const modelWithVariants = z.strictObject({ ...modelFields, variants: z.array(variant) });

const modelDetail = z.strictObject({
  ...modelFields,
  variants: z.array(variant),
  versions: z.array(version).describe('Newest first.'),
  operations: z.array(operation).describe('The most recent, newest first.'),
});

const modelList = z.strictObject({ models: z.array(modelWithVariants) });

const storeList = z.strictObject({ stores: z.array(store) });

const health = z.strictObject({ status: z.string(), service: z.string() });

const readiness = z.strictObject({
  status: z.enum(['ready', 'not ready']),
  checks: z.record(z.string(), z.string()).describe('Each check → "ok" or why it failed.'),
});

const shared = {
  ErrorBody: errorBody,
  Store: store,
  Model: model,
  VersionCounts: versionCounts,
  Variant: variant,
  Version: version,
  Operation: operation,
  OperationAccepted: operationAccepted,
  ResetAccepted: resetAccepted,
  RollbackDone: rollbackDone,
  ModelWithVariants: modelWithVariants,
  ModelDetail: modelDetail,
  ModelList: modelList,
  StoreList: storeList,
  Health: health,
  Readiness: readiness,
};

/** Registers the shared shapes on the app (before the routes that reference them). */
export function addResponseSchemas(app: FastifyInstance): void {
  for (const schema of sharedJsonSchemas(shared)) app.addSchema(schema);
}

/** `{ $ref }` to a shared shape. */
export const ref = (id: keyof typeof shared) => ({ $ref: `${id}#` });

/** The error responses a route can give (`'5xx'`: any server fault), each the error body. */
export function errorResponses(...statuses: Array<number | '5xx'>): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const status of statuses) responses[String(status)] = ref('ErrorBody');
  return responses;
}
