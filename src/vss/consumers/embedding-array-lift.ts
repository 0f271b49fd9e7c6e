/**
 * An embedding event's vectors read straight from its bytes into Float32Arrays, and the rest of the
 * event decoded by JSON.parse. A vector of 128 numbers is most of an event's text, and JSON.parse
 * turned each number into a double of a JavaScript array that was then copied into a Float32Array:
 * about 4.6 of the 5.6 µs JSON.parse took per event (bench/RESULTS.md, "vss-ingest").
 *
 * Only the plainest form is read here: `"embedding":[` then numbers written as `-?digits[.digits]`
 * with at most 15 digits in all, separated by bare commas, then `]`. Such a number is m / 10^k with
 * m and 10^k exact doubles, so one IEEE division gives the correctly rounded double, the one
 * JSON.parse gives, and storing it into a Float32Array rounds it as the JSON path does. Anything else
 * (exponents, more digits, whitespace, an empty list, a third vector) answers undefined, and the
 * caller decodes the whole message as before.
 *
 * The arrays are replaced in the text by placeholder strings carrying a per-process nonce, and the
 * lift counts only when JSON.parse put every placeholder where a vector belongs (`index_space.embedding`,
 * `search_space.embedding`): a key named `embedding` anywhere else, a duplicated key, or a key that
 * merely ends in `"embedding` leaves a placeholder elsewhere, and the message is decoded in full.
 * test/vss/consumers/embedding-array-lift.test.ts compares the two paths on valid and broken events.
 */
import { randomBytes } from 'node:crypto';
import { MAX_DIMENSION } from './embedding-event-rules.js';
import { VectorSlab } from './vector-slab.js';

const KEY = Buffer.from('"embedding":[');
/** Where a vector may sit in an embedding event (either shape). */
const PLACES = ['index_space', 'search_space'] as const;
const NONCE = randomBytes(12).toString('hex');
const PLACEHOLDERS = PLACES.map((_, i) => `lattice-vector-${NONCE}-${i}`);
/** Most significant digits a number may have here: below 2^53, so the mantissa is exact. */
const MAX_DIGITS = 15;
const POWERS_OF_TEN = Array.from({ length: MAX_DIGITS + 1 }, (_, k) => 10 ** k);

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** For the pieces after the first: a byte order mark there is text (JSON.parse refuses it), not one to drop. */
const utf8KeepingBom = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const vectors = new VectorSlab();
const scratch = new Float32Array(MAX_DIMENSION);

/** Numbers of the array opening at `open` (a `[`) into `scratch`: the index after its `]` and the count, or undefined. */
function scanArray(bytes: Uint8Array, open: number): { end: number; count: number } | undefined {
  let i = open + 1;
  let count = 0;
  for (;;) {
    let c = bytes[i];
    const negative = c === 45; // -
    if (negative) c = bytes[++i];
    if (c === undefined || c < 48 || c > 57) return undefined;
    let mantissa = 0;
    let digits = 0;
    let decimals = 0;
    if (c === 48) {
      // A leading 0 stands alone: 01 is not JSON.
      digits = 1;
      c = bytes[++i];
    } else {
      while (c !== undefined && c >= 48 && c <= 57) {
        mantissa = mantissa * 10 + (c - 48);
        digits++;
        c = bytes[++i];
      }
    }
    if (c === 46) {
      // .
      c = bytes[++i];
      if (c === undefined || c < 48 || c > 57) return undefined;
      while (c !== undefined && c >= 48 && c <= 57) {
        mantissa = mantissa * 10 + (c - 48);
        digits++;
        decimals++;
        c = bytes[++i];
      }
    }
    if (digits > MAX_DIGITS || count === MAX_DIMENSION) return undefined;
    const value = mantissa / POWERS_OF_TEN[decimals]!;
    scratch[count++] = negative ? -value : value;
    if (c === 44) {
      // ,
      i++;
      continue;
    }
    return c === 93 ? { end: i + 1, count } : undefined; // ]
  }
}

/**
 * The message with its vectors lifted into Float32Arrays (at `index_space.embedding` and
 * `search_space.embedding`), or undefined when the bytes are not in the plain form this reads (or
 * not JSON at all): the caller then decodes them in full, which also words any refusal.
 */
export function liftEmbeddingArrays(payload: Uint8Array): Record<string, unknown> | undefined {
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const lifted: { open: number; end: number; vector: Float32Array }[] = [];
  for (let at = bytes.indexOf(KEY); at !== -1; at = bytes.indexOf(KEY, lifted.at(-1)!.end)) {
    if (lifted.length === PLACES.length) return undefined;
    const open = at + KEY.length - 1;
    const scanned = scanArray(bytes, open);
    if (scanned === undefined) return undefined;
    const vector = vectors.take(scanned.count);
    vector.set(scratch.subarray(0, scanned.count));
    lifted.push({ open, end: scanned.end, vector });
  }
  if (lifted.length === 0) return undefined;

  let message: unknown;
  try {
    // Cut at ASCII bytes (`[` and after `]`), so each piece is valid UTF-8 exactly when the whole is.
    let text = '';
    let from = 0;
    lifted.forEach(({ open, end }, i) => {
      const decoder = i === 0 ? utf8 : utf8KeepingBom;
      text += `${decoder.decode(bytes.subarray(from, open))}"${PLACEHOLDERS[i]}"`;
      from = end;
    });
    message = JSON.parse(text + utf8KeepingBom.decode(bytes.subarray(from)));
  } catch {
    return undefined;
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const fields = message as Record<string, unknown>;
  let placed = 0;
  for (const place of PLACES) {
    const holder = fields[place];
    if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) continue;
    const space = holder as Record<string, unknown>;
    const i = PLACEHOLDERS.indexOf(space.embedding as string);
    if (i === -1 || i >= lifted.length) continue;
    space.embedding = lifted[i]!.vector;
    placed++;
  }
  return placed === lifted.length ? fields : undefined;
}
