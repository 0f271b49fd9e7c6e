/**
 * Request bodies before schema validation: the JSON-holding fields (`model_config`, `vss_filter`, …)
 * may come as JSON strings (vss.md) and are parsed into objects here, so one schema validates both
 * forms and errors name the inner field; and every body's nesting is bounded, since open objects
 * (`vectordb_config`) would otherwise carry arbitrarily deep values into recursive code (hashing,
 * JSON encoding, PostgreSQL's jsonb parser) and fail there as a 5xx; and text PostgreSQL cannot
 * store (NUL, unpaired surrogates) is refused here rather than by the database as a 5xx.
 */
import { invalidArgument } from '../../../platform/errors.js';

/** Deeper than any real `vss_filter` or vector DB config. */
export const MAX_BODY_DEPTH = 16;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Parses the string form of each JSON-holding field of `body` in place. INVALID_ARGUMENT naming the
 * field when the string is not JSON or does not hold an object; other values are left to the schema.
 */
export function parseJsonFields(body: unknown, fields: readonly string[]): void {
  if (!isPlainObject(body)) return;
  for (const field of fields) {
    const value = body[field];
    if (typeof value !== 'string') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      // The parser's message quotes the input; say what is wrong without echoing it.
      throw invalidArgument(`${field} must be an object or a JSON string holding one: not valid JSON`, field);
    }
    if (!isPlainObject(parsed)) {
      throw invalidArgument(`${field} must be an object or a JSON string holding one`, field);
    }
    body[field] = parsed;
  }
}

/** Text SQL can store: no NUL character and no unpaired UTF-16 surrogate (jsonb refuses both). */
function storableText(text: string): boolean {
  return !text.includes('\u0000') && !unpairedSurrogate.test(text);
}
const unpairedSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * INVALID_ARGUMENT naming the top-level field whose value nests deeper than `max` levels or holds a
 * string (or key) SQL cannot store. Walks without recursion, so a hostile body cannot exhaust the
 * stack here either.
 */
export function checkBodyValues(body: unknown, max = MAX_BODY_DEPTH): void {
  if (!isPlainObject(body)) return;
  for (const [field, value] of Object.entries(body)) {
    const pending: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
    while (pending.length > 0) {
      const next = pending.pop()!;
      if (typeof next.value === 'string') {
        if (!storableText(next.value)) throw unstorable(field);
        continue;
      }
      if (typeof next.value !== 'object' || next.value === null) continue;
      if (next.depth > max) {
        throw invalidArgument(`${field} nests deeper than ${max} levels`, field);
      }
      if (Array.isArray(next.value)) {
        for (const child of next.value) pending.push({ value: child, depth: next.depth + 1 });
        continue;
      }
      for (const [key, child] of Object.entries(next.value)) {
        if (!storableText(key)) throw unstorable(field);
        pending.push({ value: child, depth: next.depth + 1 });
      }
    }
  }
}

function unstorable(field: string) {
  return invalidArgument(`${field} holds a NUL character or an unpaired UTF-16 surrogate`, field);
}
