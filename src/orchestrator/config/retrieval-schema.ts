import { z } from 'zod';

/**
 * The `retrieval` block of a model config (issue 40): retrievers, each a vss Search whose candidates
 * become the request's targets, and the `response` ordering (`sort_by`, `limit`) that turns one
 * Predict into a ranked top-N. Shapes only; validate-retrieval.ts checks meaning with JSON paths.
 */
const name = z.string().min(1).max(200);
const positiveInt = z.number().int().positive();

/** The vss filter operators, by their FilterOp names without the prefix. */
export const FILTER_OPS = [
  'in',
  'not_in',
  'exists',
  'not_exists',
  'lt',
  'lte',
  'gt',
  'gte',
  'between',
  'between_inclusive',
] as const;

const retrievalFilter = z
  .object({
    /** The vss attribute filtered on. */
    field: name,
    op: z.enum(FILTER_OPS),
    /** Literal values. */
    values: z.array(z.string()).default([]),
    /** A context feature whose value (or values, for a vector) is added to `values` per request. */
    values_from: name.optional(),
  })
  .strict();

const retrievalAttribute = z
  .object({
    /** The vss attribute brought along. */
    name,
    /** The target column it fills; default its name. */
    column: name.optional(),
    /** Its type in the matrix; vss attributes are text, parsed into it. Default STRING. */
    data_type: z.string().min(1).default('STRING'),
  })
  .strict();

const retrievalQuery = z
  .object({
    /** A context feature holding the query vector (FP32_VECTOR, or any float vector). */
    context_feature: name.optional(),
    /** A context feature holding a candidate id of the searched entity: "more like this one". */
    candidate_id_from: name.optional(),
    /** A context feature holding an id of another vss entity, whose stored embedding is the query. */
    entity_embedding: z.object({ entity: name, model: name, id_from: name }).strict().optional(),
    /**
     * A feature-store vector of a context entity, fetched through the orchestrator's feature store
     * client: `column` is `<entity>:<group>:<feature>` (as feature components name their columns),
     * the entity's id read from the context feature `id_from`, sent under the key name `key`
     * (default `id_from`). `data_type` is the feature's type in the store: a float vector
     * (FP32_VECTOR by default; FP16_VECTOR, FP64_VECTOR, FP8E5M2_VECTOR, FP8E4M3_VECTOR).
     */
    feature_store_vector: z
      .object({
        entity: name,
        column: name,
        id_from: name,
        key: name.optional(),
        data_type: z.string().min(1).default('FP32_VECTOR'),
      })
      .strict()
      .optional(),
  })
  .strict();

export const retrieverSchema = z
  .object({
    name,
    /** The vss serving gRPC server, `host:port`. */
    target: z.string().min(1),
    entity: name,
    model: name,
    variant: name,
    query: retrievalQuery,
    /** Candidates asked of vss. */
    k: positiveInt.max(10_000),
    /** Most candidates this retriever contributes to the merged targets (its best first); default k. */
    quota: positiveInt.optional(),
    filters: z.array(retrievalFilter).default([]),
    attributes: z.array(retrievalAttribute).default([]),
    /** The FP32 target column of this retriever's score; default `<name>_score`. */
    score_column: name.optional(),
    /** A required retriever failing fails the call; otherwise it contributes nothing and is named in `errors`. */
    required: z.boolean().default(false),
  })
  .strict();

export const retrievalSchema = z
  .object({
    retrievers: z.array(retrieverSchema).min(1),
    /** The stage's own budget, inside the request's deadline. */
    deadline_ms: positiveInt.max(600_000).default(100),
    /** FP32 target column of each candidate's best score over the retrievers that returned it. */
    score_column: name.default('retrieval_score'),
  })
  .strict();

/** `response.sort_by`: a response column and its direction. */
export const sortBySchema = z
  .object({ column: name, order: z.enum(['desc', 'asc']).default('desc') })
  .strict();

export type RetrievalConfig = z.output<typeof retrievalSchema>;
export type RetrieverConfig = z.output<typeof retrieverSchema>;
export type SortByConfig = z.output<typeof sortBySchema>;
