import { z } from 'zod';
import { retrievalSchema, sortBySchema } from './retrieval-schema.js';
import { shadowSchema } from './shadow-schema.js';
import { splitSchema } from './split-schema.js';

/**
 * The model configuration document (orchestrator.md "Model configuration"), as stored under
 * `models/<model_config_id>`. This schema checks shapes; validate-model.ts checks meaning (the DAG,
 * columns, data types, expressions) and names the JSON path of every problem.
 */
/** Longest model, component and column name a config may use (a request's model_config_id is checked against it). */
export const MAX_NAME_LENGTH = 200;
const name = z.string().min(1).max(MAX_NAME_LENGTH);
const positiveInt = z.number().int().positive();

const cacheSettings = z
  .object({
    enabled: z.boolean().default(true),
    ttl_seconds: positiveInt.optional(),
  })
  .strict();

const fsKey = z
  .object({
    /** Key part names the feature store expects; several names split the column value on `|`. */
    schema: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .transform((s) => (Array.isArray(s) ? s : [s])),
    /** The matrix column the key value(s) are read from. */
    col: name,
  })
  .strict();

const featureGroup = z
  .object({
    label: name,
    data_type: z.string().min(1),
    /** Elements per value for vector types; 0 (default) for scalars or variable length. */
    vector_dim: z.number().int().min(0).default(0),
    features: z.array(name).min(1),
  })
  .strict();

export const featureComponentSchema = z
  .object({
    name,
    /** Feature store entity label, e.g. `catalog`. */
    entity: name,
    fs_keys: z.array(fsKey).min(1),
    feature_groups: z.array(featureGroup).min(1),
    batch_size: positiveInt.max(10_000).default(100),
    deadline_ms: positiveInt.max(600_000).default(50),
    cache: cacheSettings.optional(),
    /** Prepended to every produced column name. */
    column_prefix: z.string().default(''),
    /** A required component failing fails the request; otherwise its cells default and rows are marked. */
    required: z.boolean().default(false),
  })
  .strict();

const endpoint = z.object({ target: z.string().min(1), percentage: z.number().min(0).max(100) }).strict();

const tensorInput = z
  .object({
    name,
    data_type: z.string().min(1),
    shape: z.array(z.number().int()).min(1),
    features: z.array(name).min(1),
  })
  .strict();

const tensorOutput = z
  .object({
    name,
    data_type: z.string().min(1),
    /** Output columns, in the order of the tensor's values per row. */
    columns: z.array(name).min(1),
    /** Elements per column value; 0 (default) for scalars. */
    vector_dim: z.number().int().min(0).default(0),
  })
  .strict();

const calibration = z.discriminatedUnion('method', [
  z.object({ method: z.literal('platt'), a: z.number(), b: z.number() }).strict(),
  z
    .object({ method: z.literal('isotonic'), x: z.array(z.number()).min(2), y: z.array(z.number()).min(2) })
    .strict(),
  z.object({ method: z.literal('downsampling'), rate: z.number().gt(0).lte(1) }).strict(),
]);

export const modelServingComponentSchema = z
  .object({
    name,
    model_name: name,
    model_version: z.string().default(''),
    batch_size: positiveInt.max(100_000).default(256),
    deadline_ms: positiveInt.max(600_000).default(50),
    endpoints: z.array(endpoint).min(1),
    inputs: z.array(tensorInput).min(1),
    outputs: z.array(tensorOutput).min(1),
    calibration: calibration.optional(),
    /** Run once per slate over that slate's rows and write to SlateData. */
    slate: z.boolean().default(false),
    required: z.boolean().default(true),
  })
  .strict();

export const computeComponentSchema = z
  .object({
    name,
    /** RPN expression evaluated in-process; or `compute_id` naming one held by a numerix server. */
    expression: z.string().min(1).optional(),
    compute_id: z.string().min(1).optional(),
    /** Remote compute server (`host:port`), with `compute_id`. */
    target: z.string().min(1).optional(),
    /** Expression variable → matrix column. */
    score_mapping: z.record(z.string().min(1), name),
    output_column: name,
    data_type: z
      .enum(['FP32', 'FP64', 'fp32', 'fp64'])
      .default('FP32')
      .transform((t) => t.toUpperCase() as 'FP32' | 'FP64'),
    slate: z.boolean().default(false),
    deadline_ms: positiveInt.max(600_000).default(50),
    required: z.boolean().default(false),
  })
  .strict();

export const modelConfigSchema = z
  .object({
    model_config_id: name,
    /** String column holding each target's id. */
    target_id_column: name.default('id'),
    component_dependency: z.record(name, z.array(name)),
    cache: z
      .object({ version: z.number().int().min(0).default(1), ttl_seconds: positiveInt.default(300) })
      .strict()
      .prefault({}),
    feature_components: z.array(featureComponentSchema).default([]),
    model_serving_components: z.array(modelServingComponentSchema).default([]),
    compute_components: z.array(computeComponentSchema).default([]),
    /**
     * Columns the request supplies (context or target features), for validation. When absent, a
     * plain column name that no component produces is taken to come from the request.
     */
    request_features: z.array(name).optional(),
    /** Retrievers whose merged candidates become the targets of a Predict that gives none (retrieval-schema.ts). */
    retrieval: retrievalSchema.optional(),
    response: z
      .object({
        columns: z.array(name).min(1),
        sort_by: sortBySchema.optional(),
        limit: positiveInt.optional(),
      })
      .strict(),
    /** A sticky A/B split of this config's traffic among configs (split-schema.ts). */
    split: splitSchema.optional(),
    logging: z
      .object({
        logging_perc: z.number().min(0).max(100).default(0),
        log_batch_size: positiveInt.max(100_000).default(500),
        log_features: z.array(name).default([]),
        format: z.enum(['proto', 'arrow', 'parquet']).default('proto'),
        compression: z.enum(['none', 'gzip', 'zstd']).default('none'),
      })
      .strict()
      .prefault({}),
    /** Mirrors a share of the requests to another config and compares the answers (shadow-schema.ts). */
    shadow: shadowSchema.optional(),
  })
  .strict();

export type ModelConfig = z.output<typeof modelConfigSchema>;
export type ModelConfigInput = z.input<typeof modelConfigSchema>;
export type FeatureComponentConfig = z.output<typeof featureComponentSchema>;
export type ModelServingComponentConfig = z.output<typeof modelServingComponentSchema>;
export type ComputeComponentConfig = z.output<typeof computeComponentSchema>;
export type CalibrationConfig = z.output<typeof calibration>;
