/**
 * The admin API's request bodies and path parameters (vss.md "Admin HTTP API") as zod schemas: the
 * one source of what is enforced, of the OpenAPI document and of the handlers' body types. Fastify
 * validates every request with their JSON Schema (json-schema.ts) and the OpenAPI document is
 * generated from it, so the document cannot drift from what is enforced. Names that become SQL
 * identifiers or collection names are further checked by the store's identifier rules
 * (src/vss/store/identifiers.ts), which stay the one source of those patterns; the schemas bound
 * their length and type.
 */
import { z } from 'zod';
import { FILTER_OPS, LIMITS as VECTOR_DB_LIMITS } from '../../../platform/vectordb/index.js';
import { DISTANCE_FUNCTIONS, JOB_FREQUENCIES, VECTOR_DB_TYPES } from '../../store/index.js';
import { requestJsonSchema } from './json-schema.js';
import { MODEL_TYPES } from './model-types.js';

/** Longest JSON string accepted for a JSON-holding field (the body limit bounds it anyway). */
const MAX_JSON_STRING = 65_536;
const MAX_INT32 = 2_147_483_647;

const entity = z
  .string()
  .min(1)
  .max(128)
  .describe('Entity: 1-128 letters, digits, "_", "-" or "." starting with a letter or digit.');
const modelName = z.string().min(1).max(128).describe('Model name: same alphabet as `entity`.');
const variant = z
  .string()
  .min(1)
  .max(49)
  .describe(
    'Variant name; it becomes the column `to_be_indexed_<variant>`: a lower-case letter, then letters, digits or "_".',
  );
const tableName = z
  .string()
  .min(1)
  .max(63)
  .describe(
    'A lower-case SQL table name (a letter, then letters, digits or "_"); not starting with vss_ or pg_.',
  );
/** A column of the training data files (never SQL): bounded text. */
const sourceColumn = z.string().min(1).max(256);
const positiveId = z.int().min(1).max(MAX_INT32);
const seconds = z.int().min(0).max(MAX_INT32);
const jobFrequency = z.enum(JOB_FREQUENCIES);

/**
 * A field that holds a JSON object, accepted as the object itself or as a JSON string of it (vss.md).
 * A string is parsed before validation (json-fields.ts), so the object branch validates both forms
 * and errors name the inner field. Exactly one branch (`oneOf`): error-mapping.ts names both forms.
 */
function jsonHolding(objectSchema: z.ZodType, description: string) {
  return z
    .xor([z.string().max(MAX_JSON_STRING), objectSchema])
    .describe(`${description} An object, or the same object as a JSON string.`);
}

export const ingestionColumnMapping = z.strictObject({
  id_column: sourceColumn,
  embedding_column: sourceColumn,
  to_be_indexed_column: sourceColumn,
  search_embedding_column: sourceColumn.optional(),
});

export const modelConfig = z.strictObject({
  distance_function: z.enum(DISTANCE_FUNCTIONS),
  vector_dimension: z.int().min(1).max(65_536),
});

const filterScalar = z.union([z.string(), z.number(), z.boolean()]);

/** The original system's criteria object (vss.md "Concepts"), with the optional `op` / `values`. */
const vssFilter = z.strictObject({
  criteria: z
    .array(
      z.strictObject({
        column_name: z
          .string()
          .min(1)
          .max(63)
          .describe('An attribute label (an aggregator column): lower-case letters, digits, "_".'),
        filter_value: filterScalar.optional(),
        default_value: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
        op: z.enum(FILTER_OPS).optional(),
        values: z.array(filterScalar).max(1024).optional(),
      }),
    )
    .max(64)
    .optional(),
});

/** Host, port, replication, sharding, HNSW parameters…; `{}` takes the service's configured defaults. */
const vectorDbConfig = z.looseObject({});

const registerStore = z.strictObject({
  store_id: positiveId,
  entity,
  db_conf_id: z.string().min(1).max(256),
  embeddings_table: tableName,
  aggregator_table: tableName,
});

/** A register-model body once its JSON-holding fields are objects (json-fields.ts). */
const registerModel = z.strictObject({
  entity,
  model_name: modelName,
  ingestion_column_mapping: ingestionColumnMapping,
  embedding_store_enabled: z.boolean(),
  embedding_store_ttl: seconds.describe(
    'Seconds a stored embedding lives after its last write; 0: no expiry.',
  ),
  mq_id: z.int().min(0).max(MAX_INT32),
  model_config: modelConfig,
  store_id: positiveId,
  training_data_path: z
    .string()
    .min(1)
    .max(4096)
    .describe('A file or directory of Parquet or JSON Lines files (file:// or a plain path).'),
});

const cache = z
  .strictObject({
    memory_ttl: seconds.optional(),
    distributed_ttl: seconds.optional(),
    ttl_jitter: z.number().min(0).max(1).optional(),
  })
  .describe('Result-cache lifetimes in seconds (0 turns a level off); defaults when absent.');

/** A register-variant body once its JSON-holding fields are objects (json-fields.ts). */
const registerVariant = z.strictObject({
  entity,
  model_name: modelName,
  variant,
  vss_filter: vssFilter,
  vectordb_type: z.enum(VECTOR_DB_TYPES),
  vectordb_config: vectorDbConfig,
  job_frequency: jobFrequency,
  cache: cache.optional(),
  min_recall: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .describe(
      "Recall@k (0..1) a reset's new version must reach in every filter-selectivity bucket, measured against an exact search, before the variant is flipped to it (verify_recall); default 0.95 (0: measured, never refused).",
    ),
});

const model = z.strictObject({ entity, model_name: modelName });

const resetModel = model.extend({
  frequency: jobFrequency.optional(),
  model_type: z
    .enum(MODEL_TYPES)
    .default('RESET')
    .describe(
      'RESET (default): a new version, indexed, then flipped. DELTA: the rows go into the current version, no flip.',
    ),
});

const variantOfModel = model.extend({ variant });

/** What a variant may change live: its search width (registration fields are fixed once stored). */
const updateVariant = variantOfModel.extend({
  ef_search: z
    .int()
    .min(1)
    .max(VECTOR_DB_LIMITS.maxEfSearch)
    .nullable()
    .describe(
      "HNSW width (ef) of the variant's searches from now on, without a rebuild: wider finds more true neighbours for more work; null returns to its vectordb_config's ef_search.",
    ),
});

// The JSON Schemas Fastify validates with (and the OpenAPI document shows).

export const registerStoreBody = requestJsonSchema(registerStore);
export const registerModelBody = requestJsonSchema(
  registerModel.extend({
    ingestion_column_mapping: jsonHolding(ingestionColumnMapping, 'Columns of the training data.'),
    model_config: jsonHolding(modelConfig, 'Distance function and vector dimension.'),
  }),
);
export const registerVariantBody = requestJsonSchema(
  registerVariant.extend({
    vss_filter: jsonHolding(vssFilter, 'Which candidates the variant indexes.'),
    vectordb_config: jsonHolding(vectorDbConfig, 'Vector database settings of the variant.'),
  }),
);
export const resetModelBody = requestJsonSchema(resetModel);
export const modelBody = requestJsonSchema(model);
export const variantBody = requestJsonSchema(variantOfModel);
export const updateVariantBody = requestJsonSchema(updateVariant);
export const modelParams = requestJsonSchema(z.strictObject({ entity, model: modelName }));
export const operationParams = requestJsonSchema(
  z.strictObject({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .describe('Operation id.'),
  }),
);

/** The fields of each body that hold JSON (json-fields.ts parses their string form). */
export const JSON_FIELDS = {
  registerModel: ['ingestion_column_mapping', 'model_config'],
  registerVariant: ['vss_filter', 'vectordb_config'],
} as const;

// The TypeScript shapes of validated bodies (JSON-holding fields already parsed into objects,
// defaults filled in).

export type RegisterStoreRequest = z.output<typeof registerStore>;
export type RegisterModelRequest = z.output<typeof registerModel>;
export type RegisterVariantRequest = z.output<typeof registerVariant>;
export type ModelRequest = z.output<typeof model>;
export type ResetModelRequest = z.output<typeof resetModel>;
export type VariantRequest = z.output<typeof variantOfModel>;
export type UpdateVariantRequest = z.output<typeof updateVariant>;
