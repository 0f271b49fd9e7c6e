/**
 * Protobuf wire-format pieces for the hand-written encoders on hot paths (Predict responses,
 * inference log records and payloads, numerix requests): unsigned varints (non-negative 32-bit
 * values only), the size of a length-delimited field, string fields and fixed-width cells.
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

/** Writes a length-delimited UTF-8 string field (one-byte tag) at `at`; returns the position after it. */
export function writeStringField(out: Buffer, at: number, tag: number, value: string): number {
  out[at++] = tag;
  at = writeVarint(out, at, Buffer.byteLength(value));
  return at + out.write(value, at);
}

/**
 * Copies the `width` bytes at `from` in `data` to `at` in `out`; returns the position after them.
 * Matrix cells are mostly 1–8 bytes, where a byte loop beats a subarray and `set` per cell.
 */
export function copyCell(out: Uint8Array, at: number, data: Uint8Array, from: number, width: number): number {
  if (width <= 16) for (let i = 0; i < width; i++) out[at + i] = data[from + i]!;
  else out.set(data.subarray(from, from + width), at);
  return at + width;
}
