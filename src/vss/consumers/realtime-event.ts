/**
 * The real-time event: new values of candidates' attributes, ordered by the producer's timestamp.
 * Two shapes are accepted, so producers written for either system work unchanged:
 *
 * - the design's (vss.md): `{"timestamp", "entity_label", "data": [{"id", "label", "value"}]}`;
 * - the original system's code: `{"timestamp", "type", "entity", "data": [{"id", "data": [{"label",
 *   "value"}]}]}` (`type` is ignored).
 *
 * Both parse into one {@link RealtimeEvent}. A message that can never apply throws RejectedEvent
 * naming the offending field (`data[3].label`, `data[0].data[1].value`).
 */
import { z } from 'zod';
import { isLatticeError } from '../../platform/errors.js';
import { attributeColumn, resourceName } from '../store/index.js';
import { RejectedEvent } from './event-batch.js';

/** Bounds a single event's work (one statement row and payload change per entry). */
export const MAX_REALTIME_ENTRIES = 10_000;
/** The vector DB's own limit on point ids. */
const MAX_ID_LENGTH = 1024;
/** A value is a payload field on every point of the candidate: keep it an attribute, not a document. */
export const MAX_VALUE_LENGTH = 4096;

export interface RealtimeAttribute {
  readonly id: string;
  /** An aggregator column name (checked). */
  readonly label: string;
  readonly value: string;
}

export interface RealtimeEvent {
  /** Orders updates of one (id, label): an older one never overwrites a newer one. */
  readonly timestamp: number;
  /** The entity (`entity_label`, or `entity` in the original shape). */
  readonly entity: string;
  readonly data: readonly RealtimeAttribute[];
}

const TIMESTAMP_RULE = 'must be a non-negative integer up to 2^53 - 1 (a JSON number or a string of digits)';

/** Integers as JSON numbers or as digit strings (the design's examples quote numbers). */
const timestamp = z.union(
  [
    z.number().refine((n) => Number.isSafeInteger(n) && n >= 0, TIMESTAMP_RULE),
    z
      .string()
      .regex(/^\d{1,16}$/, TIMESTAMP_RULE)
      .transform(Number)
      .refine(Number.isSafeInteger, TIMESTAMP_RULE),
  ],
  { error: TIMESTAMP_RULE },
);

// PostgreSQL text cannot hold NUL: such a value would fail every retry, so it is refused here.
const noNul = (text: string) => !text.includes('\u0000');

const id = z.union(
  [
    z
      .string()
      .min(1, 'must be a non-empty string')
      .max(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`)
      .refine(noNul, 'must not contain NUL'),
    z
      .number()
      .refine(
        (n) => Number.isSafeInteger(n) && n >= 0,
        'must be a non-empty string or a non-negative integer',
      )
      .transform((n) => String(n)),
  ],
  { error: 'must be a non-empty string (or a non-negative integer)' },
);

const label = z.string({ error: 'must be a string' });

/** Attributes are text in the aggregator; numbers and booleans are taken as their text. */
const value = z.union(
  [
    z
      .string()
      .max(MAX_VALUE_LENGTH, `must be at most ${MAX_VALUE_LENGTH} characters`)
      .refine(noNul, 'must not contain NUL'),
    z
      .number()
      .refine(Number.isFinite, 'must be finite')
      .transform((n) => String(n)),
    z.boolean().transform((b) => String(b)),
  ],
  { error: 'must be a string, number or boolean' },
);

const entries = <T extends z.ZodType>(item: T) =>
  z
    .array(item, { error: 'must be a list' })
    .max(MAX_REALTIME_ENTRIES, `must have at most ${MAX_REALTIME_ENTRIES} entries`);

const designShape = z.object({
  timestamp,
  entity_label: z.string({ error: 'must be a string' }),
  data: entries(z.object({ id, label, value })),
});

const originalShape = z.object({
  timestamp,
  entity: z.string({ error: 'must be a string' }),
  type: z.string().optional(),
  data: entries(z.object({ id, data: entries(z.object({ label, value })) })),
});

/** `['data', 3, 'label']` → `data[3].label`. */
function fieldPath(path: readonly PropertyKey[]): string {
  let field = '';
  for (const part of path) {
    field += typeof part === 'number' ? `[${part}]` : `${field === '' ? '' : '.'}${String(part)}`;
  }
  return field === '' ? 'payload' : field;
}

/** The raw value at a schema issue's path (undefined: the field is missing). */
function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let current = raw;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}

function parseWith<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = fieldPath(issue.path);
  const message = valueAt(raw, issue.path) === undefined ? 'is required' : issue.message;
  throw new RejectedEvent(`real-time event: ${field} ${message}`, field);
}

/** Runs a store name check, turning its INVALID_ARGUMENT into a rejection naming the field. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (isLatticeError(err, 'INVALID_ARGUMENT')) {
      throw new RejectedEvent(`real-time event: ${err.message}`, err.field);
    }
    throw err;
  }
}

/** Parses and validates one message's JSON payload into the common form. */
export function parseRealtimeEvent(payload: Uint8Array): RealtimeEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch {
    throw new RejectedEvent('real-time event: payload is not UTF-8 JSON', 'payload');
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new RejectedEvent('real-time event: payload must be a JSON object', 'payload');
  }
  if ('entity_label' in raw || !('entity' in raw)) {
    const event = parseWith(designShape, raw);
    const entity = checked(() => resourceName(event.entity_label, 'entity_label'));
    const data = event.data.map((entry, i) => ({
      id: entry.id,
      label: checked(() => attributeColumn(entry.label, `data[${i}].label`)),
      value: entry.value,
    }));
    return { timestamp: event.timestamp, entity, data };
  }
  const event = parseWith(originalShape, raw);
  const entity = checked(() => resourceName(event.entity, 'entity'));
  const data: RealtimeAttribute[] = [];
  event.data.forEach((candidate, i) => {
    candidate.data.forEach((entry, j) => {
      data.push({
        id: candidate.id,
        label: checked(() => attributeColumn(entry.label, `data[${i}].data[${j}].label`)),
        value: entry.value,
      });
    });
  });
  if (data.length > MAX_REALTIME_ENTRIES) {
    throw new RejectedEvent(
      `real-time event: data must have at most ${MAX_REALTIME_ENTRIES} labels in all, got ${data.length}`,
      'data',
    );
  }
  return { timestamp: event.timestamp, entity, data };
}
