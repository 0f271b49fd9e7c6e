/**
 * The records of a collection's write-ahead log and their bytes. A segment file starts with the
 * 8-byte magic `LTVWAL01`, then frames:
 *
 *   u32 body length | u32 crc32(body) | body
 *
 * Every body is padded with zeros to a multiple of 4 bytes, so every frame starts 4-byte aligned and
 * an upsert's vectors can be read in place as a Float32Array. Body layouts (little-endian, u32 type
 * first):
 *
 *   create      1 | u32 n | n bytes JSON spec
 *   upsert      2 | u32 count | u32 dimension | count × dimension f32 | u32 n | n bytes JSON [ids, payloads]
 *   delete      3 | u32 n | n bytes JSON ids
 *   setPayload  4 | u32 n | n bytes JSON [ids, payload]
 *
 * Ids and payloads are JSON because JSON carries any JavaScript string exactly (UTF-8 would not: an
 * id may hold a lone surrogate); one JSON text per record, not per point. One record is one call:
 * a torn or damaged record is never applied, so no call is ever applied in part.
 */
import { crc32 } from 'node:zlib';
import type { ValidatedPoint, ValidatedSpec } from '../../validation.js';
import type { Payload } from '../../vector-db.js';

export const SEGMENT_MAGIC = Buffer.from('LTVWAL01', 'latin1');
const FRAME_HEADER = 8;
/** A record larger than this is refused before anything is applied (an upsert must then be split). */
export const MAX_RECORD_BYTES = 1 << 30;

const CREATE = 1;
const UPSERT = 2;
const DELETE = 3;
const SET_PAYLOAD = 4;

export type WalRecord =
  | { type: 'create'; spec: ValidatedSpec }
  | { type: 'upsert'; points: ValidatedPoint[] }
  | { type: 'delete'; ids: string[] }
  | { type: 'setPayload'; ids: string[]; payload: Payload };

const pad4 = (n: number) => (n + 3) & ~3;

/**
 * Frames appended back to back into one growing buffer, which the log writes with one `write`.
 * The buffer's ArrayBuffer starts at offset 0 and frames are 4-byte aligned, so vectors are copied
 * in with `Float32Array.set` (no per-point allocation).
 */
export class RecordBuffer {
  bytes = Buffer.from(new ArrayBuffer(64 * 1024));
  private floats = new Float32Array(this.bytes.buffer);
  length = 0;
  /** Records framed since the last clear. */
  count = 0;

  get capacity(): number {
    return this.bytes.length;
  }

  /** Bytes the upsert of `points` will take (an estimate that is never too small). */
  static upsertBound(points: readonly ValidatedPoint[], dimension: number, json: string): number {
    return FRAME_HEADER + 16 + points.length * dimension * 4 + json.length * 3 + 4;
  }

  appendCreate(spec: ValidatedSpec): void {
    this.appendJson(CREATE, JSON.stringify(spec));
  }

  appendDelete(ids: readonly string[]): void {
    this.appendJson(DELETE, JSON.stringify(ids));
  }

  appendSetPayload(ids: readonly string[], payload: Payload): void {
    this.appendJson(SET_PAYLOAD, JSON.stringify([ids, payload]));
  }

  /** `json` is {@link upsertJson} of the same points (computed once by the caller for the size check). */
  appendUpsert(points: readonly ValidatedPoint[], dimension: number, json: string): void {
    this.reserve(RecordBuffer.upsertBound(points, dimension, json));
    const start = this.length;
    const body = start + FRAME_HEADER;
    this.bytes.writeUInt32LE(UPSERT, body);
    this.bytes.writeUInt32LE(points.length, body + 4);
    this.bytes.writeUInt32LE(dimension, body + 8);
    let at = (body + 12) >> 2;
    for (const point of points) {
      this.floats.set(point.vector, at);
      at += dimension;
    }
    this.length = at << 2;
    this.writeJson(json);
    this.seal(start);
  }

  /** Forgets the frames (after they were written), keeping the memory unless it grew large. */
  clear(): void {
    this.length = 0;
    this.count = 0;
    if (this.bytes.length > 16 * 1024 * 1024) this.grow(64 * 1024, false);
  }

  private appendJson(type: number, json: string): void {
    this.reserve(FRAME_HEADER + 8 + json.length * 3 + 4);
    const start = this.length;
    this.bytes.writeUInt32LE(type, start + FRAME_HEADER);
    this.length = start + FRAME_HEADER + 4;
    this.writeJson(json);
    this.seal(start);
  }

  private writeJson(json: string): void {
    const written = this.bytes.write(json, this.length + 4, 'utf8');
    this.bytes.writeUInt32LE(written, this.length);
    this.length += 4 + written;
  }

  /** Pads the body and fills in the frame header of the frame starting at `start`. */
  private seal(start: number): void {
    const end = start + pad4(this.length - start);
    this.bytes.fill(0, this.length, end);
    this.length = end;
    const body = this.bytes.subarray(start + FRAME_HEADER, end);
    this.bytes.writeUInt32LE(body.length, start);
    this.bytes.writeUInt32LE(crc32(body), start + 4);
    this.count++;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes > this.bytes.length)
      this.grow(Math.max(this.length + bytes, this.bytes.length * 2), true);
  }

  private grow(size: number, keep: boolean): void {
    const bytes = Buffer.from(new ArrayBuffer(pad4(size)));
    if (keep) this.bytes.copy(bytes, 0, 0, this.length);
    this.bytes = bytes;
    this.floats = new Float32Array(bytes.buffer);
  }
}

/** The JSON an upsert record carries: ids and payloads, one text for the whole call. */
export function upsertJson(points: readonly ValidatedPoint[]): string {
  const ids = new Array<string>(points.length);
  const payloads = new Array<Payload>(points.length);
  for (let i = 0; i < points.length; i++) {
    ids[i] = points[i]!.id;
    payloads[i] = points[i]!.payload;
  }
  return JSON.stringify([ids, payloads]);
}

export interface DecodedSegment {
  records: WalRecord[];
  /** Offset after the last whole record; less than the file's length when its tail is torn or damaged. */
  end: number;
  /** Why decoding stopped before the end of the data, if it did. */
  problem?: string;
}

/**
 * Decodes a segment's records, stopping at the first frame that is cut short, fails its checksum or
 * does not parse. The caller decides whether that is a torn tail (the newest segment) or damage.
 */
export function decodeSegment(data: Buffer): DecodedSegment {
  const records: WalRecord[] = [];
  if (data.length < SEGMENT_MAGIC.length) {
    // A segment created by a crash before its magic reached the disk holds nothing.
    return { records, end: 0, problem: data.length === 0 ? undefined : 'truncated segment header' };
  }
  if (!data.subarray(0, SEGMENT_MAGIC.length).equals(SEGMENT_MAGIC)) {
    return { records, end: 0, problem: 'not a write-ahead log segment (bad magic)' };
  }
  let offset = SEGMENT_MAGIC.length;
  while (offset < data.length) {
    if (data.length - offset < FRAME_HEADER)
      return { records, end: offset, problem: 'truncated frame header' };
    const length = data.readUInt32LE(offset);
    if (length < 8 || length % 4 !== 0 || data.length - offset - FRAME_HEADER < length) {
      return { records, end: offset, problem: 'truncated record' };
    }
    const body = data.subarray(offset + FRAME_HEADER, offset + FRAME_HEADER + length);
    if (crc32(body) !== data.readUInt32LE(offset + 4))
      return { records, end: offset, problem: 'checksum mismatch' };
    let record: WalRecord;
    try {
      record = decodeBody(body);
    } catch (err) {
      return { records, end: offset, problem: `unreadable record (${(err as Error).message})` };
    }
    records.push(record);
    offset += FRAME_HEADER + length;
  }
  return { records, end: offset };
}

function decodeBody(body: Buffer): WalRecord {
  const type = body.readUInt32LE(0);
  if (type === UPSERT) {
    const count = body.readUInt32LE(4);
    const dimension = body.readUInt32LE(8);
    const floatsEnd = 12 + count * dimension * 4;
    const vectors = floatView(body, 12, count * dimension);
    const [ids, payloads] = readJson(body, floatsEnd) as [string[], Payload[]];
    if (ids.length !== count || payloads.length !== count) throw new Error('point count mismatch');
    const points: ValidatedPoint[] = new Array(count);
    for (let i = 0; i < count; i++) {
      points[i] = {
        id: ids[i]!,
        vector: vectors.subarray(i * dimension, (i + 1) * dimension),
        payload: payloads[i]!,
      };
    }
    return { type: 'upsert', points };
  }
  const json = readJson(body, 4);
  switch (type) {
    case CREATE:
      return { type: 'create', spec: json as ValidatedSpec };
    case DELETE:
      return { type: 'delete', ids: json as string[] };
    case SET_PAYLOAD: {
      const [ids, payload] = json as [string[], Payload];
      return { type: 'setPayload', ids, payload };
    }
    default:
      throw new Error(`unknown record type ${type}`);
  }
}

function readJson(body: Buffer, at: number): unknown {
  const length = body.readUInt32LE(at);
  if (at + 4 + length > body.length) throw new Error('JSON runs past the record');
  return JSON.parse(body.toString('utf8', at + 4, at + 4 + length));
}

/** `count` floats at `offset` of `body`: a view when aligned (the usual case), else a copy. */
function floatView(body: Buffer, offset: number, count: number): Float32Array {
  if (offset + count * 4 > body.length) throw new Error('vectors run past the record');
  const start = body.byteOffset + offset;
  if (start % 4 === 0) return new Float32Array(body.buffer, start, count);
  const copy = new Uint8Array(count * 4);
  copy.set(body.subarray(offset, offset + count * 4));
  return new Float32Array(copy.buffer);
}
