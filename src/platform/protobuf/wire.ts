/**
 * Protobuf wire-format pieces for the hand-written encoders on hot paths (inference log payloads,
 * Predict responses): unsigned varints (non-negative 32-bit values only) and the size of a
 * length-delimited field.
 */

/** Bytes of `value` as a varint; `value` is a non-negative 32-bit integer. */
export function varintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

/** Writes `value` as a varint at `at`; returns the position after it. */
export function writeVarint(out: Uint8Array, at: number, value: number): number {
  let v = value >>> 0;
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
  return at;
}

/** Bytes of a length-delimited field with a one-byte tag: tag, length, body. */
export function fieldSize(body: number): number {
  return 1 + varintSize(body) + body;
}
