/**
 * Schema pieces the ingestion topic's messages share (embedding events and EOF markers), written so
 * every refusal names its field the way the producer spelled it (`index_space.embedding[3]`), and a
 * zod failure becomes the {@link RejectedEvent} the consumer runner dead-letters.
 */
import { z } from 'zod';
import { quote } from '../../platform/quote.js';
import { RejectedEvent } from './event-batch.js';

/** `is required` when the field is absent, else `must be <what>`. */
export const expect =
  (what: string) =>
  (issue: { input?: unknown }): string =>
    issue.input === undefined ? 'is required' : `must be ${what}`;

/** Like {@link expect} for a wrong type only; other issues keep their own message (a map's keys, values). */
export const expectType =
  (what: string) =>
  (issue: { code?: string; input?: unknown }): string | undefined =>
    issue.code === 'invalid_type' ? expect(what)(issue) : undefined;

/** Entities and model names (the store's rule: they name collections and cache keys). */
export const RESOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export const resourceNameField = z
  .string({ error: expect('a string') })
  .regex(RESOURCE_NAME, 'must be 1-128 letters, digits, "_", "-" or "." (starting with a letter or digit)');

/**
 * An integer from `min` to `max`, as a JSON number or as decimal text (the design shows `"1"`, the
 * original's partitions are text).
 */
export function integerField(min: number, max: number, what: string) {
  const message = `must be ${what} (a number or decimal text)`;
  return z.unknown().transform((value, ctx) => {
    const n = integerIn(value, min, max);
    if (n !== undefined) return n;
    ctx.addIssue({ code: 'custom', message: value === undefined ? 'is required' : message });
    return z.NEVER;
  });
}

/** {@link integerField}'s rule: the integer `value` holds, if it is one from `min` to `max`. */
export function integerIn(value: unknown, min: number, max: number): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^(0|[1-9][0-9]{0,15})$/.test(value)
        ? Number(value)
        : Number.NaN;
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined;
}

export const MIN_VERSION = 1;
export const MAX_VERSION = 2 ** 31 - 1;

/** A version: a positive 32-bit integer. */
export const versionField = integerField(MIN_VERSION, MAX_VERSION, 'a positive integer below 2^31');

/**
 * An event names its store version as `version` (the design's) or `embedding_store_version` (the
 * original system's): at least one, and the same when both are sent.
 */
export function checkVersionSpellings(
  fields: { version?: number; embedding_store_version?: number },
  ctx: z.RefinementCtx,
): void {
  const { version, embedding_store_version: storeVersion } = fields;
  if (version === undefined && storeVersion === undefined) {
    ctx.addIssue({ code: 'custom', path: ['version'], message: 'is required (or embedding_store_version)' });
  }
  if (version !== undefined && storeVersion !== undefined && version !== storeVersion) {
    ctx.addIssue({
      code: 'custom',
      path: ['embedding_store_version'],
      message: `must equal version when both are sent (${storeVersion} vs ${version})`,
    });
  }
}

export const MAX_JOB_ID = 256;

export const jobIdField = z
  .string({ error: expect('a string') })
  .min(1, 'must not be empty')
  .max(MAX_JOB_ID, `must be at most ${MAX_JOB_ID} characters`);

/**
 * A JSON-holding field: the design sends it as a JSON string, the original system as the JSON value
 * itself; both are accepted and validated by `schema`.
 */
export function jsonField<T extends z.ZodType>(schema: T) {
  return z.preprocess((value, ctx) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON (a JSON text or the JSON value itself)' });
      return z.NEVER;
    }
  }, schema);
}

/** `a.b[3].c` from a zod issue path. */
function fieldOf(path: readonly PropertyKey[]): string {
  let field = '';
  for (const part of path) {
    if (typeof part === 'number') field += `[${part}]`;
    else field += field === '' ? String(part) : `.${String(part)}`;
  }
  return field;
}

/** Parses with `schema`, or throws a RejectedEvent naming the first offending field. */
export function parseOrReject<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  let issue = result.error.issues[0]!;
  // A refused map key: the key's own message, with the path naming the key.
  if (issue.code === 'invalid_key' && issue.issues[0] !== undefined) {
    issue = { ...issue.issues[0], path: issue.path };
  }
  const path = fieldOf(issue.path);
  if (path === '') throw new RejectedEvent(`${what}: ${issue.message}`);
  // Map keys are input: a field naming an odd or long one is quoted (one line, bounded), since it
  // travels in the dead letter's headers.
  const field = SAFE_FIELD.test(path) ? path : quote(path);
  throw new RejectedEvent(`${what}: ${field} ${issue.message}`, field);
}

const SAFE_FIELD = /^[A-Za-z0-9_.[\]-]{1,200}$/;
