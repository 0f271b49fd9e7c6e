/**
 * OrchestratorLog records in protobuf wire format, written straight into one Buffer (sizes first):
 * byte for byte what the generated `OrchestratorLog.encode` writes (the tests compare them), without
 * its writer's chunk per field and fork per schema entry. Every logged request goes through it.
 */
import { OrchestratorLog } from '../../gen/orchestrator/v1/log.js';
import { fieldSize, varintSize, writeStringField, writeVarint } from '../../platform/protobuf/wire.js';
import { featureSchemaSize, plainSchemas, writeFeatureSchema } from './feature-schema.js';

const USER_ID = 0x0a; // 1
const TRACKING_ID = 0x12; // 2
const MODEL_CONFIG_ID = 0x1a; // 3
const CONFIG_VERSION = 0x22; // 4
const CREATED_AT_MS = 0x28; // 5, varint
const ENTITY_ID = 0x32; // 6
const SCHEMA = 0x3a; // 7
const FORMAT = 0x40; // 8, varint
const COMPRESSION = 0x48; // 9, varint
const PAYLOAD = 0x52; // 10
const METADATA = 0x5a; // 11, map entries { key = 1, value = 2 }
const KEY = 0x0a;
const VALUE = 0x12;

export function encodeLogRecord(record: OrchestratorLog): Uint8Array {
  const createdAt = record.createdAtMs;
  // Negative or beyond 2^53 (never written by the logger): the generated encoder handles those.
  if (
    createdAt < 0n ||
    createdAt > BigInt(Number.MAX_SAFE_INTEGER) ||
    record.format < 0 ||
    record.compression < 0 ||
    !plainSchemas(record.schema)
  )
    return OrchestratorLog.encode(record).finish();
  const created = Number(createdAt);
  const strings = [record.userId, record.trackingId, record.modelConfigId, record.configVersion];
  const stringTags = [USER_ID, TRACKING_ID, MODEL_CONFIG_ID, CONFIG_VERSION];
  const schemaSizes = record.schema.map(featureSchemaSize);
  const metadata = Object.entries(record.metadata);
  const entrySize = ([key, value]: [string, string]) =>
    (key !== '' ? fieldSize(Buffer.byteLength(key)) : 0) +
    (value !== '' ? fieldSize(Buffer.byteLength(value)) : 0);

  let total = 0;
  for (const text of strings) if (text !== '') total += fieldSize(Buffer.byteLength(text));
  if (created !== 0) total += 1 + longVarintSize(created);
  for (const id of record.entityIds) total += fieldSize(Buffer.byteLength(id));
  for (const size of schemaSizes) total += fieldSize(size);
  if (record.format !== 0) total += 1 + varintSize(record.format);
  if (record.compression !== 0) total += 1 + varintSize(record.compression);
  if (record.payload.length !== 0) total += fieldSize(record.payload.length);
  for (const entry of metadata) total += fieldSize(entrySize(entry));

  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < strings.length; i++) {
    if (strings[i] !== '') at = writeStringField(out, at, stringTags[i]!, strings[i]!);
  }
  if (created !== 0) {
    out[at++] = CREATED_AT_MS;
    at = writeLongVarint(out, at, created);
  }
  for (const id of record.entityIds) at = writeStringField(out, at, ENTITY_ID, id);
  for (let i = 0; i < record.schema.length; i++) {
    out[at++] = SCHEMA;
    at = writeVarint(out, at, schemaSizes[i]!);
    at = writeFeatureSchema(out, at, record.schema[i]!);
  }
  if (record.format !== 0) {
    out[at++] = FORMAT;
    at = writeVarint(out, at, record.format);
  }
  if (record.compression !== 0) {
    out[at++] = COMPRESSION;
    at = writeVarint(out, at, record.compression);
  }
  if (record.payload.length !== 0) {
    out[at++] = PAYLOAD;
    at = writeVarint(out, at, record.payload.length);
    out.set(record.payload, at);
    at += record.payload.length;
  }
  for (const entry of metadata) {
    out[at++] = METADATA;
    at = writeVarint(out, at, entrySize(entry));
    if (entry[0] !== '') at = writeStringField(out, at, KEY, entry[0]);
    if (entry[1] !== '') at = writeStringField(out, at, VALUE, entry[1]);
  }
  if (at !== total) throw new Error(`OrchestratorLog encoder wrote ${at} of ${total} bytes`);
  return out;
}

/** Varint bytes of a non-negative integer up to 2^53 (wire.ts's helpers take 32-bit values). */
function longVarintSize(value: number): number {
  let size = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 0x80)) size++;
  return size;
}

function writeLongVarint(out: Buffer, at: number, value: number): number {
  let v = value;
  while (v >= 0x80) {
    out[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}
