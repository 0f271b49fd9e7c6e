/**
 * JSON schemas of the admin API's request bodies and path parameters (vss.md "Admin HTTP API").
 * Fastify validates every request with them and the OpenAPI document is generated from them, so the
 * document cannot drift from what is enforced. Names that become SQL identifiers or collection names
 * are further checked by the store's identifier rules (src/vss/store/identifiers.ts), which stay the
 * one source of those patterns; the schemas bound their length and type.
 */
import { FILTER_OPS } from '../../../platform/vectordb/index.js';
import { DISTANCE_FUNCTIONS, JOB_FREQUENCIES, VECTOR_DB_TYPES } from '../../store/index.js';
import { MODEL_TYPES, type ModelType } from './model-types.js';

/** Longest JSON string accepted for a JSON-holding field (the body limit bounds it anyway). */
const MAX_JSON_STRING = 65_536;

const entity = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  description: 'Entity: 1-128 letters, digits, "_", "-" or "." starting with a letter or digit.',
} as const;
const modelName = { ...entity, description: 'Model name: same alphabet as `entity`.' } as const;
const variant = {
  type: 'string',
  minLength: 1,
  maxLength: 49,
  description:
    'Variant name; it becomes the column `to_be_indexed_<variant>`: a lower-case letter, then letters, digits or "_".',
} as const;
const tableName = {
  type: 'string',
  minLength: 1,
  maxLength: 63,
  description:
    'A lower-case SQL table name (a letter, then letters, digits or "_"); not starting with vss_ or pg_.',
} as const;
/** A column of the training data files (never SQL): bounded text. */
const sourceColumn = { type: 'string', minLength: 1, maxLength: 256 } as const;
const positiveId = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const;
const jobFrequency = { type: 'string', enum: [...JOB_FREQUENCIES] } as const;

/**
 * A field that holds a JSON object, accepted as the object itself or as a JSON string of it (vss.md).
 * A string is parsed before validation (json-fields.ts), so the object branch validates both forms
 * and errors name the inner field.
 */
function jsonHolding(objectSchema: Record<string, unknown>, description: string) {
  return {
    description: `${description} An object, or the same object as a JSON string.`,
    oneOf: [{ type: 'string', maxLength: MAX_JSON_STRING }, objectSchema],
  };
}

export const ingestionColumnMappingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id_column', 'embedding_column', 'to_be_indexed_column'],
  properties: {
    id_column: sourceColumn,
    embedding_column: sourceColumn,
    to_be_indexed_column: sourceColumn,
    search_embedding_column: sourceColumn,
  },
} as const;

export const modelConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['distance_function', 'vector_dimension'],
  properties: {
    distance_function: { type: 'string', enum: [...DISTANCE_FUNCTIONS] },
    vector_dimension: { type: 'integer', minimum: 1, maximum: 65_536 },
  },
} as const;

const filterScalar = { type: ['string', 'number', 'boolean'] } as const;

/** The original system's criteria object (vss.md "Concepts"), with the optional `op` / `values`. */
export const vssFilterSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    criteria: {
      type: 'array',
      maxItems: 64,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['column_name'],
        properties: {
          column_name: {
            type: 'string',
            minLength: 1,
            maxLength: 63,
            description: 'An attribute label (an aggregator column): lower-case letters, digits, "_".',
          },
          filter_value: filterScalar,
          default_value: { type: ['string', 'number', 'boolean', 'null'] },
          op: { type: 'string', enum: [...FILTER_OPS] },
          values: { type: 'array', maxItems: 1024, items: filterScalar },
        },
      },
    },
  },
} as const;

/** Host, port, replication, sharding, HNSW parameters…; `{}` takes the service's configured defaults. */
export const vectorDbConfigSchema = { type: 'object', additionalProperties: true } as const;

export const registerStoreBody = {
  type: 'object',
  additionalProperties: false,
  required: ['store_id', 'entity', 'db_conf_id', 'embeddings_table', 'aggregator_table'],
  properties: {
    store_id: positiveId,
    entity,
    db_conf_id: { type: 'string', minLength: 1, maxLength: 256 },
    embeddings_table: tableName,
    aggregator_table: tableName,
  },
} as const;

export const registerModelBody = {
  type: 'object',
  additionalProperties: false,
  required: [
    'entity',
    'model_name',
    'ingestion_column_mapping',
    'embedding_store_enabled',
    'embedding_store_ttl',
    'mq_id',
    'model_config',
    'store_id',
    'training_data_path',
  ],
  properties: {
    entity,
    model_name: modelName,
    ingestion_column_mapping: jsonHolding(ingestionColumnMappingSchema, 'Columns of the training data.'),
    embedding_store_enabled: { type: 'boolean' },
    embedding_store_ttl: {
      type: 'integer',
      minimum: 0,
      maximum: 2_147_483_647,
      description: 'Seconds a stored embedding lives after its last write; 0: no expiry.',
    },
    mq_id: { type: 'integer', minimum: 0, maximum: 2_147_483_647 },
    model_config: jsonHolding(modelConfigSchema, 'Distance function and vector dimension.'),
    store_id: positiveId,
    training_data_path: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      description: 'A file or directory of Parquet or JSON Lines files (file:// or a plain path).',
    },
  },
} as const;

export const cacheSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Result-cache lifetimes in seconds (0 turns a level off); defaults when absent.',
  properties: {
    memory_ttl: { type: 'integer', minimum: 0, maximum: 2_147_483_647 },
    distributed_ttl: { type: 'integer', minimum: 0, maximum: 2_147_483_647 },
    ttl_jitter: { type: 'number', minimum: 0, maximum: 1 },
  },
} as const;

export const registerVariantBody = {
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
  ],
  properties: {
    entity,
    model_name: modelName,
    variant,
    vss_filter: jsonHolding(vssFilterSchema, 'Which candidates the variant indexes.'),
    vectordb_type: { type: 'string', enum: [...VECTOR_DB_TYPES] },
    vectordb_config: jsonHolding(vectorDbConfigSchema, 'Vector database settings of the variant.'),
    job_frequency: jobFrequency,
    cache: cacheSchema,
  },
} as const;

export const resetModelBody = {
  type: 'object',
  additionalProperties: false,
  required: ['entity', 'model_name'],
  properties: {
    entity,
    model_name: modelName,
    frequency: jobFrequency,
    model_type: {
      type: 'string',
      enum: [...MODEL_TYPES],
      default: 'RESET',
      description:
        'RESET (default): a new version, indexed, then flipped. DELTA: the rows go into the current version, no flip.',
    },
  },
} as const;

export const modelBody = {
  type: 'object',
  additionalProperties: false,
  required: ['entity', 'model_name'],
  properties: { entity, model_name: modelName },
} as const;

export const variantBody = {
  type: 'object',
  additionalProperties: false,
  required: ['entity', 'model_name', 'variant'],
  properties: { entity, model_name: modelName, variant },
} as const;

export const modelParams = {
  type: 'object',
  additionalProperties: false,
  required: ['entity', 'model'],
  properties: { entity, model: modelName },
} as const;

export const operationParams = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'Operation id.' } },
} as const;

/** The fields of each body that hold JSON (json-fields.ts parses their string form). */
export const JSON_FIELDS = {
  registerModel: ['ingestion_column_mapping', 'model_config'],
  registerVariant: ['vss_filter', 'vectordb_config'],
} as const;

// The TypeScript shapes of validated bodies (JSON-holding fields already parsed into objects).

export interface RegisterStoreRequest {
  store_id: number;
  entity: string;
  db_conf_id: string;
  embeddings_table: string;
  aggregator_table: string;
}

export interface RegisterModelRequest {
  entity: string;
  model_name: string;
  ingestion_column_mapping: {
    id_column: string;
    embedding_column: string;
    to_be_indexed_column: string;
    search_embedding_column?: string;
  };
  embedding_store_enabled: boolean;
  embedding_store_ttl: number;
  mq_id: number;
  model_config: { distance_function: (typeof DISTANCE_FUNCTIONS)[number]; vector_dimension: number };
  store_id: number;
  training_data_path: string;
}

export interface RegisterVariantRequest {
  entity: string;
  model_name: string;
  variant: string;
  vss_filter: Record<string, unknown>;
  vectordb_type: (typeof VECTOR_DB_TYPES)[number];
  vectordb_config: Record<string, unknown>;
  job_frequency: (typeof JOB_FREQUENCIES)[number];
  cache?: { memory_ttl?: number; distributed_ttl?: number; ttl_jitter?: number };
}

export interface ModelRequest {
  entity: string;
  model_name: string;
}

export interface ResetModelRequest extends ModelRequest {
  frequency?: (typeof JOB_FREQUENCIES)[number];
  model_type?: ModelType;
}

export interface VariantRequest extends ModelRequest {
  variant: string;
}
