/**
 * The embedding event (reset or delta) as the consumers accept it, validated at the boundary. Two
 * shapes are accepted, field by field, so producers written for either work unchanged (docs/vss.md,
 * "Embedding events"):
 *
 * - the design's (vss.md): `version`, the maps and `payload` as JSON strings, operations `A`, `D`, `P`;
 * - the original system's (skye-notes §5.1): `embedding_store_version`, the maps and `payload` as JSON
 *   values, operations `ADD`, `DELETE`, `UPSERT_PAYLOAD`; `environment` and `partition` are ignored.
 *
 * Anything that can never be applied is refused here with the field named: a missing or mistyped
 * field, an empty or over-long id, a non-finite or out-of-float32-range value, an unknown operation,
 * an `A` without an embedding, versions that disagree. What needs the store (unknown model or variant,
 * wrong dimension) is decided when the event is applied.
 */
import { z } from 'zod';
import type { Payload, PayloadValue } from '../../platform/vectordb/index.js';
import { plainEmbeddingEvent } from './embedding-event-fast-path.js';
import {
  type EmbeddingEvent,
  type EmbeddingOperation,
  FLAG_PREFIX,
  FLOAT32_MAX,
  MAX_CANDIDATE_ID,
  MAX_DIMENSION,
  MAX_PAYLOAD_FIELDS,
  MAX_VARIANTS,
  OPERATIONS,
  PAYLOAD_KEY,
  VARIANT_KEY,
} from './embedding-event-rules.js';
import {
  checkVersionSpellings,
  expect,
  expectType,
  jobIdField,
  jsonField,
  parseOrReject,
  resourceNameField,
  versionField,
} from './event-fields.js';

export type { EmbeddingEvent, EmbeddingOperation };

/** The longest id the vector databases accept; PostgreSQL text refuses NUL. */
const candidateIdField = z.union(
  [
    z
      .string()
      .min(1, 'must not be empty')
      .max(MAX_CANDIDATE_ID, `must be at most ${MAX_CANDIDATE_ID} characters`)
      .refine((id) => !id.includes('\u0000'), 'must not contain NUL'),
    // Numeric ids (the original system's Qdrant ids) are taken as their decimal text.
    z
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .transform((n) => String(n)),
  ],
  { error: expect('a non-empty string (or a non-negative integer)') },
);

/** A vector: a non-empty list of finite numbers within float32's range, as a Float32Array. */
const vectorField = z.unknown().transform((value, ctx) => {
  if (!Array.isArray(value)) {
    ctx.addIssue({ code: 'custom', message: 'must be a list of numbers' });
    return z.NEVER;
  }
  if (value.length > MAX_DIMENSION) {
    ctx.addIssue({ code: 'custom', message: `has ${value.length} values, more than ${MAX_DIMENSION}` });
    return z.NEVER;
  }
  const vector = new Float32Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const x: unknown = value[i];
    if (typeof x !== 'number' || !Number.isFinite(x) || Math.abs(x) > FLOAT32_MAX) {
      ctx.addIssue({ code: 'custom', message: 'must be a finite number within float32 range', path: [i] });
      return z.NEVER;
    }
    vector[i] = x;
  }
  return vector;
});

const variantKey = z
  .string()
  .regex(VARIANT_KEY, 'is not a variant name (a lower-case letter, then letters, digits or _)');

function variantMap<T extends z.ZodType>(value: T) {
  return jsonField(
    z
      .record(variantKey, value, { error: expectType('an object of variant → value') })
      .refine((map) => Object.keys(map).length <= MAX_VARIANTS, `must name at most ${MAX_VARIANTS} variants`),
  );
}

const payloadKey = z
  .string()
  .regex(PAYLOAD_KEY, 'is not a payload field name (1-128 letters, digits, "_" or "-")')
  .refine(
    (key) => !key.startsWith(FLAG_PREFIX),
    'is a membership flag: those are computed from variants_index_map and vss_filter',
  );

const payloadValue = z.union(
  [
    z.string(),
    z.number().refine(Number.isFinite),
    z.boolean(),
    z.array(z.string()),
    z.null(), // no value: left out, so the aggregator's value (or the criterion's default) applies
  ],
  { error: expect('a string, number, boolean, list of strings or null') },
);

const payloadField = jsonField(
  z
    .record(payloadKey, payloadValue, { error: expectType('an object of field → value') })
    .refine(
      (payload) => Object.keys(payload).length <= MAX_PAYLOAD_FIELDS,
      `must have at most ${MAX_PAYLOAD_FIELDS} fields`,
    ),
);

const operationField = z.enum(Object.keys(OPERATIONS) as [string, ...string[]], {
  error: expect('A, D or P (or ADD, DELETE, UPSERT_PAYLOAD)'),
});

const embeddingEventSchema = z
  .object(
    {
      entity: resourceNameField,
      model_name: resourceNameField,
      candidate_id: candidateIdField,
      version: versionField.optional(),
      embedding_store_version: versionField.optional(),
      job_id: jobIdField.optional(),
      index_space: z.object(
        {
          variants_version_map: variantMap(versionField),
          variants_index_map: variantMap(z.boolean({ error: expect('a boolean') })).optional(),
          embedding: vectorField.optional(),
          operation: operationField,
          payload: payloadField.optional(),
        },
        { error: expect('an object') },
      ),
      search_space: z
        .object({ embedding: vectorField.optional() }, { error: expect('an object') })
        .nullable()
        .optional(),
    },
    { error: expect('a JSON object') },
  )
  .superRefine((event, ctx) => {
    checkVersionSpellings(event, ctx);
    const operation = OPERATIONS[event.index_space.operation];
    const embedding = event.index_space.embedding;
    if (operation === 'A' && (embedding === undefined || embedding.length === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['index_space', 'embedding'],
        message: 'is required for an add (operation A / ADD)',
      });
    }
  });

/**
 * Validates a decoded embedding event; throws RejectedEvent naming the field. The common case (an
 * event that is plainly valid) takes a hand-written path that gives the same event for a fraction of
 * the schema's cost (embedding-event-fast-path.ts); anything else is decided by the schema.
 */
export function parseEmbeddingEvent(message: unknown, eventKey: string): EmbeddingEvent {
  return plainEmbeddingEvent(message, eventKey) ?? embeddingEventBySchema(message, eventKey);
}

/** {@link parseEmbeddingEvent} by the schema alone. */
export function embeddingEventBySchema(message: unknown, eventKey: string): EmbeddingEvent {
  const raw = parseOrReject(embeddingEventSchema, message, 'embedding event');
  const space = raw.index_space;
  const operation = OPERATIONS[space.operation]!;
  const search = raw.search_space?.embedding;
  let payload: Payload | undefined;
  if (space.payload !== undefined) {
    payload = {};
    for (const [key, value] of Object.entries(space.payload)) {
      if (value !== null) payload[key] = value as PayloadValue;
    }
  }
  return {
    entity: raw.entity,
    modelName: raw.model_name,
    candidateId: raw.candidate_id,
    version: (raw.version ?? raw.embedding_store_version)!,
    jobId: raw.job_id,
    operation,
    variantVersions: new Map(Object.entries(space.variants_version_map)),
    indexFlags:
      space.variants_index_map === undefined ? undefined : new Map(Object.entries(space.variants_index_map)),
    // An empty list is how some producers say "none" (deletes, payload updates).
    embedding: space.embedding !== undefined && space.embedding.length > 0 ? space.embedding : undefined,
    searchEmbedding: search !== undefined && search.length > 0 ? search : undefined,
    payload,
    eventKey,
  };
}
