/**
 * PredictResponse in protobuf wire format, written directly into one Buffer: sizes first, then the
 * bytes, without the generated encoder's writer (a fork and join per message, a chunk per field) and
 * without its final copy into a Buffer. Byte for byte what `PredictResponse.encode` writes (the
 * tests compare them), including proto3's omission of default scalars. Every response of the
 * service goes through it, so it is on every request's path.
 */
import { PredictResponse, PredictService, type Score } from '../../gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../gen/orchestrator/v1/types.js';
import { fieldSize, varintSize, writeVarint } from '../../platform/protobuf/wire.js';

const TAG = {
  trackingId: 0x0a, // 1, length-delimited
  targetSchema: 0x12, // 2
  targetScores: 0x1a, // 3
  pairSchema: 0x22, // 4
  pairScores: 0x2a, // 5
  slateSchema: 0x32, // 6
  slateScores: 0x3a, // 7
  schemaName: 0x0a, // FeatureSchema.name = 1
  schemaType: 0x10, // FeatureSchema.data_type = 2, varint
  schemaDim: 0x18, // FeatureSchema.vector_dim = 3, varint
  scoreValue: 0x0a, // Score.output_values = 1
  scoreError: 0x12, // Score.error = 2
} as const;

function schemaSize(schema: FeatureSchema): number {
  const name = Buffer.byteLength(schema.name);
  return (
    (name > 0 ? fieldSize(name) : 0) +
    (schema.dataType !== 0 ? 1 + varintSize(schema.dataType) : 0) +
    (schema.vectorDim !== 0 ? 1 + varintSize(schema.vectorDim) : 0)
  );
}

function scoreSize(score: Score): number {
  let size = 0;
  for (const value of score.outputValues) size += fieldSize(value.length);
  const error = score.error === '' ? 0 : Buffer.byteLength(score.error);
  return error > 0 ? size + fieldSize(error) : size;
}

/** Negative enum or int32 values take ten varint bytes; such a response goes the generated way. */
function plain(schemas: readonly FeatureSchema[]): boolean {
  for (const s of schemas) if (s.dataType < 0 || s.vectorDim < 0) return false;
  return true;
}

export function encodePredictResponse(response: PredictResponse): Buffer {
  const schemaLists = [response.targetOutputSchema, response.pairOutputSchema, response.slateOutputSchema];
  if (!schemaLists.every(plain)) return Buffer.from(PredictResponse.encode(response).finish());
  const scoreLists = [response.targetScores, response.pairScores, response.slateScores];

  // Pass 1: sizes (kept per message for pass 2).
  const schemaSizes = schemaLists.map((list) => list.map(schemaSize));
  const scoreSizes = scoreLists.map((list) => list.map(scoreSize));
  const tracking = Buffer.byteLength(response.trackingId);
  let total = tracking > 0 ? fieldSize(tracking) : 0;
  for (let l = 0; l < 3; l++) {
    for (const size of schemaSizes[l]!) total += fieldSize(size);
    for (const size of scoreSizes[l]!) total += fieldSize(size);
  }

  // Pass 2: fields in number order, as the generated encoder writes them.
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  if (tracking > 0) {
    out[at++] = TAG.trackingId;
    at = writeVarint(out, at, tracking);
    at += out.write(response.trackingId, at);
  }
  const schemaTags = [TAG.targetSchema, TAG.pairSchema, TAG.slateSchema];
  const scoreTags = [TAG.targetScores, TAG.pairScores, TAG.slateScores];
  for (let l = 0; l < 3; l++) {
    const schemas = schemaLists[l]!;
    for (let i = 0; i < schemas.length; i++) {
      const schema = schemas[i]!;
      out[at++] = schemaTags[l]!;
      at = writeVarint(out, at, schemaSizes[l]![i]!);
      if (schema.name !== '') {
        out[at++] = TAG.schemaName;
        at = writeVarint(out, at, Buffer.byteLength(schema.name));
        at += out.write(schema.name, at);
      }
      if (schema.dataType !== 0) {
        out[at++] = TAG.schemaType;
        at = writeVarint(out, at, schema.dataType);
      }
      if (schema.vectorDim !== 0) {
        out[at++] = TAG.schemaDim;
        at = writeVarint(out, at, schema.vectorDim);
      }
    }
    const scores = scoreLists[l]!;
    for (let i = 0; i < scores.length; i++) {
      const score = scores[i]!;
      out[at++] = scoreTags[l]!;
      at = writeVarint(out, at, scoreSizes[l]![i]!);
      for (const value of score.outputValues) {
        out[at++] = TAG.scoreValue;
        at = writeVarint(out, at, value.length);
        out.set(value, at);
        at += value.length;
      }
      if (score.error !== '') {
        out[at++] = TAG.scoreError;
        at = writeVarint(out, at, Buffer.byteLength(score.error));
        at += out.write(score.error, at);
      }
    }
  }
  if (at !== total) throw new Error(`PredictResponse encoder wrote ${at} of ${total} bytes`);
  return out;
}

/** `orchestrator.v1.Predict` with every method's response serialised by {@link encodePredictResponse}. */
export const PredictServiceFastResponses: typeof PredictService = {
  inferPointWise: { ...PredictService.inferPointWise, responseSerialize: encodePredictResponse },
  inferPairWise: { ...PredictService.inferPairWise, responseSerialize: encodePredictResponse },
  inferSlateWise: { ...PredictService.inferSlateWise, responseSerialize: encodePredictResponse },
};
