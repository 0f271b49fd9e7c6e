/**
 * The shapes of the model config routes (console-routes.ts), as zod schemas turned into the JSON
 * Schema Fastify validates requests and serializes answers with (and an OpenAPI document reads).
 */
import { z } from 'zod';

type Json = Record<string, unknown>;

/** A JSON Schema of `schema` as Fastify takes it (draft 7, no `$schema`). */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-7' }) as Json;
  return rest;
}

const problem = z.object({
  path: z
    .string()
    .describe(
      'JSON path of the offending value, e.g. feature_components[0].fs_keys[0].col; empty for the document',
    ),
  message: z.string(),
});

const state = z
  .enum(['live', 'rejected', 'invalid', 'removed'])
  .describe(
    'live: the stored document serves; rejected: the latest change was rejected, an earlier version serves; invalid: the stored document never validated, nothing serves; removed: no document is stored',
  );

const rejected = z.object({
  version: z.string().describe('the config store version rejected'),
  at: z.string(),
  error: z.string(),
  problems: z.array(problem),
});

const document = z.unknown().describe('a model config document (orchestrator.md "Model configuration")');

export const errorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    field: z.string().optional(),
    problems: z
      .array(problem)
      .optional()
      .describe('every validation problem, on INVALID_ARGUMENT of a document'),
  }),
});

export const idParams = z.object({ id: z.string().min(1).describe('model_config_id') });

export const modelList = z.object({
  models: z.array(
    z.object({
      model_config_id: z.string(),
      state,
      version: z.string().optional().describe('the config store version serving now'),
      loaded_at: z.string().optional(),
      rejected: rejected.optional(),
      changed_at: z.string().optional().describe('when the newest recorded revision was made'),
      revision: z.number().int().describe('the newest recorded revision (0: none)'),
      revisions: z.number().int().describe('revisions kept'),
    }),
  ),
});

export const modelDetail = z.object({
  model_config_id: z.string(),
  state,
  document: document.describe('the document stored now (null when none)'),
  live_document: document.describe('the document serving now (null when none)'),
  version: z.string().optional(),
  loaded_at: z.string().optional(),
  rejected: rejected.optional(),
  revision: z.number().int().describe('the newest recorded revision: send it as expected_revision'),
});

export const revisionList = z.object({
  revisions: z.array(
    z.object({
      revision: z.number().int(),
      at: z.string(),
      author: z.string(),
      comment: z.string(),
      action: z.enum(['apply', 'clone', 'rollback', 'delete', 'external']),
      document: document.describe('the document the config became (null when the change removed it)'),
    }),
  ),
});

export const dagAnswer = z.object({
  nodes: z.array(
    z.object({
      id: z.string(),
      kind: z.enum(['retriever', 'feature_init', 'feature', 'model', 'compute']),
      inputs: z.array(z.string()).describe('columns read'),
      outputs: z.array(z.string()).describe('columns written'),
      deadline_ms: z.number().optional(),
      endpoint: z.string().optional(),
      required: z.boolean(),
      entity: z.string().optional(),
      model: z.string().optional(),
      expression: z.string().optional(),
      compute_id: z.string().optional(),
      slate: z.boolean().optional(),
      vss_model: z.string().optional().describe('retrievers: the vss model searched'),
      variant: z.string().optional().describe('retrievers: the vss variant searched'),
      k: z.number().int().optional().describe('retrievers: candidates asked of vss'),
      quota: z.number().int().optional().describe('retrievers: most candidates kept'),
    }),
  ),
  edges: z.array(z.object({ from: z.string(), to: z.string() })),
});

export const validateBody = z.object({
  document,
  model_config_id: z
    .string()
    .optional()
    .describe("validate as this id (default: the document's model_config_id)"),
});
export const validation = z.object({ valid: z.boolean(), problems: z.array(problem) });

const comment = z.string().max(2000).default('').describe('why: recorded with the revision');
const expectedRevision = z
  .number()
  .int()
  .min(0)
  .optional()
  .describe('the revision the change was made against; 409 ABORTED when another one was recorded since');

export const putBody = z.object({ document, comment, expected_revision: expectedRevision });
export const cloneBody = z.object({ new_id: z.string().min(1), comment });
export const rollbackBody = z.object({
  revision: z.number().int().min(1),
  comment,
  expected_revision: expectedRevision,
});
/** DELETE takes its note in the query (a body, which some clients cannot send with DELETE, may carry the same fields). */
export const deleteQuery = z.object({
  comment: z.string().max(2000).optional().describe('why: recorded with the revision'),
  expected_revision: expectedRevision,
});

export const changeResult = z.object({
  model_config_id: z.string(),
  revision: z.number().int().describe('the revision recorded'),
  version: z.string().describe('the config store version written'),
  state,
});

const trafficNumbers = {
  requests_per_s: z.number(),
  errors_per_s: z.number(),
  error_rate: z.number().describe('errors / requests (0 without requests)'),
  p50_ms: z.number().optional(),
  p99_ms: z.number().optional(),
};

export const statsAnswer = z.object({
  window_s: z.number().describe('seconds covered: the last minute, or since the process started'),
  models: z.array(
    z.object({
      model_config_id: z.string(),
      ...trafficNumbers,
      components: z.array(
        z.object({ name: z.string(), kind: z.enum(['feature', 'model', 'compute']), ...trafficNumbers }),
      ),
      arms: z
        .array(z.object({ model_config_id: z.string(), ...trafficNumbers }))
        .optional()
        .describe("with a sticky A/B split: the requests each arm's config served"),
    }),
  ),
});

export const exampleQuery = z.object({
  pattern: z.enum(['pointwise', 'pairwise', 'slatewise']).default('pointwise'),
});

const featureSchema = z.object({
  name: z.string(),
  dataType: z.string(),
  vectorDim: z.number().int().optional(),
});

export const predictRequestJson = z
  .object({
    modelConfigId: z.string(),
    contextFeatures: z.array(featureSchema.extend({ value: z.string().describe('base64') })).optional(),
    targetInputSchema: z.array(featureSchema).optional(),
    targets: z.array(z.object({ id: z.string(), featureValues: z.array(z.string()).optional() })),
    pairInputSchema: z.array(featureSchema).optional(),
    pairs: z
      .array(
        z.object({
          firstTargetIndex: z.number().int().optional(),
          secondTargetIndex: z.number().int().optional(),
          featureValues: z.array(z.string()).optional(),
        }),
      )
      .optional(),
    slateInputSchema: z.array(featureSchema).optional(),
    slates: z
      .array(
        z.object({
          slateTargetIndices: z.array(z.number().int()),
          featureValues: z.array(z.string()).optional(),
        }),
      )
      .optional(),
    returnTargetScores: z.boolean().optional(),
  })
  .describe('orchestrator.v1.PredictRequest in the proto3 JSON mapping');
