import { LatticeError } from '../platform/errors.js';

/**
 * The stored form of one feature group of one entity key: the group's feature values in registry
 * order, each prefixed by its byte length.
 *
 *   byte 0      layout version (1)
 *   then, per feature: length as an unsigned LEB128 varint (1 byte below 128), then the value bytes
 *
 * A fixed-width FP32 costs 5 bytes. Length prefixes (rather than widths taken from the registry) keep
 * stored rows readable after a feature is appended to a group (older values simply end early) and let
 * a reader notice a value whose type changed instead of misreading every value after it.
 */
export const GROUP_LAYOUT_VERSION = 1;

export function encodeGroup(values: readonly Uint8Array[]): Uint8Array {
  let size = 1;
  for (const value of values) size += varintSize(value.length) + value.length;
  const out = new Uint8Array(size);
  out[0] = GROUP_LAYOUT_VERSION;
  let offset = 1;
  for (const value of values) {
    let length = value.length;
    while (length >= 0x80) {
      out[offset++] = (length & 0x7f) | 0x80;
      length >>>= 7;
    }
    out[offset++] = length;
    out.set(value, offset);
    offset += value.length;
  }
  return out;
}

/**
 * The first `count` values of a stored group, as views into `blob` (no copies). Values missing at the
 * end (the group gained features after this row was written) are `undefined`; values beyond `count`
 * are ignored. A malformed blob is INTERNAL naming `what`.
 */
export function decodeGroup(blob: Uint8Array, count: number, what: string): (Uint8Array | undefined)[] {
  if (blob.length === 0 || blob[0] !== GROUP_LAYOUT_VERSION) {
    throw corrupt(what, `unknown layout version ${blob[0] ?? '(empty)'}`);
  }
  const values = new Array<Uint8Array | undefined>(count).fill(undefined);
  let offset = 1;
  for (let i = 0; i < count && offset < blob.length; i++) {
    let length = 0;
    let shift = 0;
    for (;;) {
      const byte = blob[offset++];
      if (byte === undefined || shift > 28) throw corrupt(what, `value ${i} has a cut-off length`);
      length += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
      shift += 7;
    }
    if (offset + length > blob.length) throw corrupt(what, `value ${i} runs past the end`);
    values[i] = blob.subarray(offset, offset + length);
    offset += length;
  }
  return values;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n >>>= 7;
    size++;
  }
  return size;
}

function corrupt(what: string, reason: string): LatticeError {
  return new LatticeError('INTERNAL', `stored value of ${what} is corrupt: ${reason}`);
}
