/**
 * Reading a protobuf message's fields without decoding it: tags and lengths only. The request
 * pre-checks of the orchestrator and vss walk a request with it to count what their limits bound and
 * check string fields' UTF-8 before the decoder builds an object per value.
 */
import { isUtf8 } from 'node:buffer';
import { invalidArgument } from '../errors.js';

/** Wire type of length-delimited fields (strings, bytes, messages, packed repeats). */
export const LEN = 2;

/** The reader's position, module-wide so that a walk allocates nothing; eachField sets it back to
 * the end of each field after `visit`, so nested walks from inside `visit` are safe. */
let at = 0;

/** A varint at `at` (advancing it); -1 when it runs past `end` or over 10 bytes. */
function varint(buf: Uint8Array, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10 && at < end; i++) {
    const byte = buf[at++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
  return -1;
}

export type Visit = (field: number, wireType: number, from: number, to: number) => void;

/** Calls `visit` for every field of `buf[start, end)` (for LEN fields, `from`/`to` bound the payload); stops quietly at malformed bytes. */
export function eachField(buf: Uint8Array, start: number, end: number, visit: Visit): void {
  at = start;
  while (at < end) {
    const key = varint(buf, end);
    if (key < 0) return;
    const wireType = key % 8;
    let from = at;
    let to: number;
    if (wireType === 0) {
      if (varint(buf, end) < 0) return;
      to = at;
    } else if (wireType === 1) to = at + 8;
    else if (wireType === 5) to = at + 4;
    else if (wireType === LEN) {
      const length = varint(buf, end);
      if (length < 0) return;
      from = at;
      to = at + length;
    } else return;
    if (to > end) return;
    visit(Math.floor(key / 8), wireType, from, to);
    at = to;
  }
}

export function checkUtf8(buf: Uint8Array, from: number, to: number, field: () => string): void {
  if (!isUtf8(buf.subarray(from, to))) {
    const name = field();
    throw invalidArgument(`${name} is not valid UTF-8`, name);
  }
}

/**
 * The fields of `buf[start, end)` one at a time, as {@link eachField} visits them (stopping quietly at
 * malformed bytes), for walks that pause between fields (a time-sliced pre-check). One cursor per
 * walk; it allocates nothing per field.
 */
export class FieldCursor {
  field = 0;
  wireType = 0;
  /** For LEN fields, the payload's bounds; for others, the value's. */
  from = 0;
  to = 0;
  private pos: number;

  constructor(
    private readonly buf: Uint8Array,
    start: number,
    private readonly end: number,
  ) {
    this.pos = start;
  }

  /** Moves to the next field; false at the end or at malformed bytes. */
  next(): boolean {
    if (this.pos >= this.end) return false;
    at = this.pos;
    const key = varint(this.buf, this.end);
    if (key < 0) return this.stop();
    const wireType = key % 8;
    let from = at;
    let to: number;
    if (wireType === 0) {
      if (varint(this.buf, this.end) < 0) return this.stop();
      to = at;
    } else if (wireType === 1) to = at + 8;
    else if (wireType === 5) to = at + 4;
    else if (wireType === LEN) {
      const length = varint(this.buf, this.end);
      if (length < 0) return this.stop();
      from = at;
      to = at + length;
    } else return this.stop();
    if (to > this.end) return this.stop();
    this.field = Math.floor(key / 8);
    this.wireType = wireType;
    this.from = from;
    this.to = to;
    this.pos = to;
    return true;
  }

  private stop(): false {
    this.pos = this.end;
    return false;
  }
}
