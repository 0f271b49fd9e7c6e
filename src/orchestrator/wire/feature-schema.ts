/**
 * `FeatureSchema` (orchestrator/v1/types.proto) in protobuf wire format, for the hand-written
 * encoder of Predict responses: proto3's omission of default scalars,
 * as the generated encoder writes it.
 */
import type { FeatureSchema } from '../../gen/orchestrator/v1/types.js';
import { fieldSize, varintSize, writeStringField, writeVarint } from '../../platform/protobuf/wire.js';

const NAME = 0x0a; // name = 1, length-delimited
const DATA_TYPE = 0x10; // data_type = 2, varint
const VECTOR_DIM = 0x18; // vector_dim = 3, varint

/**
 * Whether every schema has only non-negative numbers (negative enum or int32 values take ten varint
 * bytes; the service never writes them, and a message with one goes the generated way).
 */
export function plainSchemas(schemas: readonly FeatureSchema[]): boolean {
  for (const s of schemas) if (s.dataType < 0 || s.vectorDim < 0) return false;
  return true;
}

/** Bytes of a FeatureSchema message body. */
export function featureSchemaSize(schema: FeatureSchema): number {
  const name = Buffer.byteLength(schema.name);
  return (
    (name > 0 ? fieldSize(name) : 0) +
    (schema.dataType !== 0 ? 1 + varintSize(schema.dataType) : 0) +
    (schema.vectorDim !== 0 ? 1 + varintSize(schema.vectorDim) : 0)
  );
}

/** Writes a FeatureSchema message body at `at`; returns the position after it. */
export function writeFeatureSchema(out: Buffer, at: number, schema: FeatureSchema): number {
  if (schema.name !== '') at = writeStringField(out, at, NAME, schema.name);
  if (schema.dataType !== 0) {
    out[at++] = DATA_TYPE;
    at = writeVarint(out, at, schema.dataType);
  }
  if (schema.vectorDim !== 0) {
    out[at++] = VECTOR_DIM;
    at = writeVarint(out, at, schema.vectorDim);
  }
  return at;
}
