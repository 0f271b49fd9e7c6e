/**
 * `numerix.Numerix/Compute` messages in protobuf wire format, written and read directly: the request
 * from the component's columns into one Buffer (byte for byte what the generated encoder writes for
 * the same rows; the tests compare them), the response straight into one score per row, without a
 * message object, an array or a Buffer per row. Every remote compute of every request goes through
 * both; the generated path built and parsed several objects per row on each side.
 */
import { LatticeError } from '../../platform/errors.js';
import { copyCell, fieldSize, writeStringField, writeVarint } from '../../platform/protobuf/wire.js';
import type { RemoteComputeRequest } from '../clients/remote-compute.js';

/** Length-delimited fields 1 to 4 (tag byte = field << 3 | 2). */
const LEN_1 = 0x0a;
const LEN_2 = 0x12;
const LEN_3 = 0x1a;
const LEN_4 = 0x22;

/** The request's bytes, and where each row's id lies in them (to check the echoed ids against). */
export interface EncodedCompute {
  bytes: Buffer;
  idStart: Int32Array;
  idLength: Int32Array;
}

/**
 * NumerixRequestProto { entity_score_data: { schema, entity_scores: one Score { byte_data: [id,
 * values…] } per row, compute_id, data_type } }. The caller has checked that every column holds one
 * value per id in the request's precision.
 */
export function encodeComputeRequest(request: RemoteComputeRequest): EncodedCompute {
  const { ids, columns, schema } = request;
  const rows = ids.length;
  const width = request.dataType === 'FP32' ? 4 : 8;
  const dataType = request.dataType === 'FP32' ? 'fp32' : 'fp64';
  const idLength = new Int32Array(rows);
  // The value part of a row (each value: tag, length 4 or 8, bytes) is the same size for every row.
  const valuesSize = columns.length * fieldSize(width);
  let body = 0;
  for (const name of schema) body += fieldSize(Buffer.byteLength(name));
  for (let r = 0; r < rows; r++) {
    const idBytes = Buffer.byteLength(ids[r]!);
    idLength[r] = idBytes;
    body += fieldSize(fieldSize(fieldSize(idBytes) + valuesSize));
  }
  if (request.computeId !== '') body += fieldSize(Buffer.byteLength(request.computeId));
  body += fieldSize(dataType.length);

  const bytes = Buffer.allocUnsafe(fieldSize(body));
  const idStart = new Int32Array(rows);
  let at = 0;
  bytes[at++] = LEN_1; // NumerixRequestProto.entity_score_data
  at = writeVarint(bytes, at, body);
  for (const name of schema) at = writeStringField(bytes, at, LEN_1, name);
  // Values are copied as the bytes they are in the matrix (NaN payloads included).
  const sources = columns.map((c) => new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
  for (let r = 0; r < rows; r++) {
    const byteList = fieldSize(idLength[r]!) + valuesSize;
    bytes[at++] = LEN_2; // EntityScoreData.entity_scores
    at = writeVarint(bytes, at, fieldSize(byteList));
    bytes[at++] = LEN_2; // Score.byte_data
    at = writeVarint(bytes, at, byteList);
    bytes[at++] = LEN_1; // ByteList.values: the id, then one value per column
    at = writeVarint(bytes, at, idLength[r]!);
    idStart[r] = at;
    at += bytes.write(ids[r]!, at);
    for (const source of sources) {
      bytes[at++] = LEN_1;
      bytes[at++] = width;
      at = copyCell(bytes, at, source, r * width, width);
    }
  }
  if (request.computeId !== '') at = writeStringField(bytes, at, LEN_3, request.computeId);
  at = writeStringField(bytes, at, LEN_4, dataType);
  if (at !== bytes.length) throw new Error(`numerix request encoder wrote ${at} of ${bytes.length} bytes`);
  return { bytes, idStart, idLength };
}

/**
 * One score per request row from a NumerixResponseProto: the `error` arm becomes FAILED_PRECONDITION
 * with the server's message (the endpoint is healthy); anything else that is not one `[id, score]`
 * row per request row, in order, is INTERNAL naming `where`. Scores come as byte values (4- or 8-byte
 * little-endian floats) or as decimal strings; unknown fields are skipped, as protobuf requires.
 */
export function readComputeScores(response: Uint8Array, sent: EncodedCompute, where: string): Float64Array {
  const reader = new Reader(response, where);
  // The oneof: the last of its fields on the wire wins.
  let data: [number, number] | undefined;
  let error: [number, number] | undefined;
  while (reader.more()) {
    const tag = reader.varint();
    if (tag === LEN_1) {
      data = reader.span();
      error = undefined;
    } else if (tag === LEN_2) {
      error = reader.span();
      data = undefined;
    } else reader.skip(tag);
  }
  if (error) {
    let message = '';
    for (const field = new Reader(response, where, error); field.more(); ) {
      const tag = field.varint();
      if (tag === LEN_1) message = field.text();
      else field.skip(tag);
    }
    throw new LatticeError('FAILED_PRECONDITION', `${where} failed: ${message}`);
  }
  if (!data) throw new LatticeError('INTERNAL', `${where}: the response holds neither scores nor an error`);

  // ComputationScoreData: schema (1, not needed) and one Score (2) per row.
  const rows = sent.idStart.length;
  const starts: number[] = [];
  const ends: number[] = [];
  for (const scores = new Reader(response, where, data); scores.more(); ) {
    const tag = scores.varint();
    if (tag === LEN_2) {
      const [start, end] = scores.span();
      starts.push(start);
      ends.push(end);
    } else scores.skip(tag);
  }
  if (starts.length !== rows) {
    throw new LatticeError('INTERNAL', `${where}: ${starts.length} scores returned for ${rows} rows`);
  }
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) out[r] = readScore(response, starts[r]!, ends[r]!, sent, r, where);
  return out;
}

/** One Score: `[id, score]` in byte_data or string_data (the last present wins); the id must be row r's. */
function readScore(
  response: Uint8Array,
  start: number,
  end: number,
  sent: EncodedCompute,
  r: number,
  where: string,
): number {
  let list: [number, number] | undefined;
  let asText = false;
  for (const score = new Reader(response, where, [start, end]); score.more(); ) {
    const tag = score.varint();
    if (tag === LEN_1 || tag === LEN_2) {
      list = score.span();
      asText = tag === LEN_1;
    } else score.skip(tag);
  }
  if (!list) throw badRow(where, r, 'is empty');
  // The list's values: only the first two matter, but every one is counted for the message.
  let count = 0;
  let id: [number, number] | undefined;
  let value: [number, number] | undefined;
  for (const values = new Reader(response, where, list); values.more(); ) {
    const tag = values.varint();
    if (tag !== LEN_1) {
      values.skip(tag);
      continue;
    }
    const span = values.span();
    if (count === 0) id = span;
    else if (count === 1) value = span;
    count++;
  }
  if (!id || !value) throw badRow(where, r, `has ${count} values, expected [id, score]`);
  if (!sameBytes(response, id, sent, r)) throw badRow(where, r, 'is for another id: rows out of order');
  const length = value[1] - value[0];
  if (asText) {
    const text = Buffer.from(response.buffer, response.byteOffset + value[0], length).toString('utf8');
    const number = Number(text);
    if (text.trim() === '' || (Number.isNaN(number) && text.trim() !== 'NaN'))
      throw badRow(where, r, `has score "${text}", not a number`);
    return number;
  }
  const view = new DataView(response.buffer, response.byteOffset + value[0], length);
  if (length === 4) return view.getFloat32(0, true);
  if (length === 8) return view.getFloat64(0, true);
  throw badRow(where, r, `has a ${length}-byte score, expected 4 or 8`);
}

/** Whether the echoed id's bytes are row r's id as it was sent (a string id echoes as its UTF-8 text). */
function sameBytes(
  response: Uint8Array,
  [start, end]: [number, number],
  sent: EncodedCompute,
  r: number,
): boolean {
  const length = sent.idLength[r]!;
  if (end - start !== length) return false;
  const from = sent.idStart[r]!;
  const bytes = sent.bytes;
  for (let i = 0; i < length; i++) if (response[start + i] !== bytes[from + i]) return false;
  return true;
}

function badRow(where: string, r: number, why: string): LatticeError {
  return new LatticeError('INTERNAL', `${where}: score row ${r} ${why}`);
}

/** A cursor over the fields of one message (the whole buffer, or a length-delimited span of it). */
class Reader {
  private at: number;
  private readonly end: number;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly where: string,
    span?: [number, number],
  ) {
    this.at = span ? span[0] : 0;
    this.end = span ? span[1] : bytes.length;
  }

  more(): boolean {
    return this.at < this.end;
  }

  varint(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.at >= this.end) throw this.malformed('a varint runs past the end');
      const byte = this.bytes[this.at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    // Longer varints (64-bit values) only occur in fields skipped here: read past them.
    for (;;) {
      if (this.at >= this.end) throw this.malformed('a varint runs past the end');
      if (this.bytes[this.at++]! < 0x80) return value;
    }
  }

  /** A length-delimited field's body as [start, end). */
  span(): [number, number] {
    const length = this.varint();
    const start = this.at;
    if (length > this.end - start) throw this.malformed('a field runs past the end of its message');
    this.at = start + length;
    return [start, this.at];
  }

  text(): string {
    const [start, end] = this.span();
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + start, end - start).toString('utf8');
  }

  /** Skips a field of any wire type but groups (which proto3 never writes). */
  skip(tag: number): void {
    switch (tag & 7) {
      case 0:
        this.varint();
        return;
      case 1:
        this.advance(8);
        return;
      case 2:
        this.span();
        return;
      case 5:
        this.advance(4);
        return;
      default:
        throw this.malformed(`field ${Math.floor(tag / 8)} has wire type ${tag & 7}`);
    }
  }

  private advance(n: number): void {
    if (n > this.end - this.at) throw this.malformed('a field runs past the end of its message');
    this.at += n;
  }

  private malformed(why: string): LatticeError {
    return new LatticeError('INTERNAL', `${this.where}: malformed response: ${why}`);
  }
}
