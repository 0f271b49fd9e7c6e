/**
 * PredictResponse in protobuf wire format, written straight from the matrices into one Buffer: sizes
 * first, then the bytes, without a Score object, an array or a Buffer per row, without the generated
 * encoder's writer (a fork and join per message, a chunk per field) and without its final copy. Byte
 * for byte what `PredictResponse.encode` writes for the same answer (the tests compare them),
 * including proto3's omission of default scalars. Every response of the service goes through it.
 */
import { PredictResponse, PredictService, type Score } from '../../gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../gen/orchestrator/v1/types.js';
import { copyCell, fieldSize, writeStringField, writeVarint } from '../../platform/protobuf/wire.js';
import { nextTurn, sliceOver, stopIfOver } from '../../platform/scheduling/index.js';
import { featureSchemaSize, plainSchemas, writeFeatureSchema } from './feature-schema.js';
import { predictDecoding } from './request-decoding.js';

const TAG = {
  trackingId: 0x0a, // 1, length-delimited
  targetSchema: 0x12, // 2
  targetScores: 0x1a, // 3
  pairSchema: 0x22, // 4
  pairScores: 0x2a, // 5
  slateSchema: 0x32, // 6
  slateScores: 0x3a, // 7
  /** 40, length-delimited: a two-byte tag (varint 0x142). */
  errors: [0xc2, 0x02],
  /** 41: varint 0x14a. */
  targetIds: [0xca, 0x02],
  scoreValue: 0x0a, // Score.output_values = 1
  scoreError: 0x12, // Score.error = 2
} as const;

/** PredictResponse.served_model_config_id = 60, length-delimited: a two-byte tag (60 << 3 | 2 = 482 as a varint). */
const SERVED_TAG = [0xe2, 0x03] as const;

/** A column of an answer: fixed-width values back to back in `data`, or a value per row. */
export type AnswerColumn =
  | { readonly width: number; readonly data: Uint8Array }
  | { readonly width: undefined; value(row: number): Uint8Array };

/** Score rows straight from a matrix: one per row, the listed columns' values and the row's error. */
export interface ScoreTable {
  readonly schema: readonly FeatureSchema[];
  readonly columns: readonly AnswerColumn[];
  readonly rows: number;
  rowError(row: number): string;
}

/** A PredictResponse still in the matrices it is read from; {@link encodePredictAnswer} writes it. */
export interface PredictAnswer {
  readonly trackingId: string;
  /** The config that served the request (an arm of a split, or the one the request named). */
  readonly servedModelConfigId: string;
  readonly target: ScoreTable;
  readonly pair: ScoreTable;
  readonly slate: ScoreTable;
  /** PredictResponse.errors (field 40): what failed without failing the request, e.g. a retriever. */
  readonly errors?: readonly string[];
  /** PredictResponse.target_ids (field 41): each target row's id, when rows are not in request order. */
  readonly targetIds?: readonly string[];
}

export const NO_SCORES: ScoreTable = { schema: [], columns: [], rows: 0, rowError: () => '' };

function cell(column: AnswerColumn, row: number): Uint8Array {
  return column.width === undefined
    ? column.value(row)
    : column.data.subarray(row * column.width, (row + 1) * column.width);
}

/** The answer as the generated PredictResponse object (the same bytes, built the slow way). */
export function toPredictResponse(answer: PredictAnswer): PredictResponse {
  const scores = (table: ScoreTable): Score[] =>
    Array.from({ length: table.rows }, (_, row) => ({
      outputValues: table.columns.map((column) => Buffer.from(cell(column, row))),
      error: table.rowError(row),
    }));
  return {
    trackingId: answer.trackingId,
    targetOutputSchema: [...answer.target.schema],
    targetScores: scores(answer.target),
    pairOutputSchema: [...answer.pair.schema],
    pairScores: scores(answer.pair),
    slateOutputSchema: [...answer.slate.schema],
    slateScores: scores(answer.slate),
    errors: [...(answer.errors ?? [])],
    targetIds: [...(answer.targetIds ?? [])],
    servedModelConfigId: answer.servedModelConfigId,
  };
}

/** Rows written between two looks at the clock (a pause of {@link writeAnswer}). */
const ROWS_PER_PAUSE = 4096;

/** Rows of the answer's three tables. */
export const answerRows = (answer: PredictAnswer): number =>
  answer.target.rows + answer.pair.rows + answer.slate.rows;

/** The answer's PredictResponse bytes, in one go (small answers; grpc-js's serializer). */
export function encodePredictAnswer(answer: PredictAnswer): Buffer {
  const steps = writeAnswer(answer);
  for (let step = steps.next(); ; step = steps.next()) if (step.done) return step.value;
}

/**
 * The same bytes, written in time slices under the call's signal and deadline: 100,000 rows take
 * tens of milliseconds. The handler hands grpc-js the finished buffer.
 */
export async function encodePredictAnswerInSlices(
  answer: PredictAnswer,
  signal: AbortSignal,
  deadline: number,
): Promise<Buffer> {
  const steps = writeAnswer(answer);
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return step.value;
    if (sliceOver()) await nextTurn(signal, deadline);
    else stopIfOver(signal, deadline);
  }
}

/** The encoder, pausing (a `yield`) every {@link ROWS_PER_PAUSE} rows of each pass. */
function* writeAnswer(answer: PredictAnswer): Generator<void, Buffer> {
  const tables = [answer.target, answer.pair, answer.slate];
  if (!tables.every((table) => plainSchemas(table.schema)))
    return Buffer.from(PredictResponse.encode(toPredictResponse(answer)).finish());

  // Pass 1: sizes, and each row's error (kept for pass 2).
  const schemaSizes = tables.map((table) => table.schema.map(featureSchemaSize));
  const rowSizes = tables.map((table) => new Int32Array(table.rows));
  const errors = tables.map((table) => new Array<string>(table.rows));
  const tracking = Buffer.byteLength(answer.trackingId);
  let total = tracking > 0 ? fieldSize(tracking) : 0;
  const served = Buffer.byteLength(answer.servedModelConfigId);
  if (served > 0) total += 1 + fieldSize(served);
  for (let l = 0; l < 3; l++) {
    const table = tables[l]!;
    for (const size of schemaSizes[l]!) total += fieldSize(size);
    // Fixed-width columns take the same bytes in every row.
    let fixed = 0;
    for (const column of table.columns) if (column.width !== undefined) fixed += fieldSize(column.width);
    for (let row = 0; row < table.rows; row++) {
      if (row % ROWS_PER_PAUSE === ROWS_PER_PAUSE - 1) yield;
      let size = fixed;
      for (const column of table.columns)
        if (column.width === undefined) size += fieldSize(column.value(row).length);
      const error = table.rowError(row);
      errors[l]![row] = error;
      if (error !== '') size += fieldSize(Buffer.byteLength(error));
      rowSizes[l]![row] = size;
      total += fieldSize(size);
    }
  }

  const answerErrors = answer.errors ?? [];
  for (const error of answerErrors) total += 1 + fieldSize(Buffer.byteLength(error));
  const targetIds = answer.targetIds ?? [];
  for (const id of targetIds) total += 1 + fieldSize(Buffer.byteLength(id));

  // Pass 2: fields in number order, as the generated encoder writes them.
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  if (tracking > 0) at = writeStringField(out, at, TAG.trackingId, answer.trackingId);
  const schemaTags = [TAG.targetSchema, TAG.pairSchema, TAG.slateSchema];
  const scoreTags = [TAG.targetScores, TAG.pairScores, TAG.slateScores];
  for (let l = 0; l < 3; l++) {
    const table = tables[l]!;
    for (let i = 0; i < table.schema.length; i++) {
      const schema = table.schema[i]!;
      out[at++] = schemaTags[l]!;
      at = writeVarint(out, at, schemaSizes[l]![i]!);
      at = writeFeatureSchema(out, at, schema);
    }
    for (let row = 0; row < table.rows; row++) {
      if (row % ROWS_PER_PAUSE === ROWS_PER_PAUSE - 1) yield;
      out[at++] = scoreTags[l]!;
      at = writeVarint(out, at, rowSizes[l]![row]!);
      for (const column of table.columns) {
        out[at++] = TAG.scoreValue;
        if (column.width === undefined) {
          const value = column.value(row);
          at = writeVarint(out, at, value.length);
          out.set(value, at);
          at += value.length;
          continue;
        }
        const { width, data } = column;
        at = writeVarint(out, at, width);
        at = copyCell(out, at, data, row * width, width);
      }
      const error = errors[l]![row]!;
      if (error !== '') at = writeStringField(out, at, TAG.scoreError, error);
    }
  }
  for (const error of answerErrors) {
    out[at++] = TAG.errors[0];
    at = writeStringField(out, at, TAG.errors[1], error);
  }
  for (const id of targetIds) {
    out[at++] = TAG.targetIds[0];
    at = writeStringField(out, at, TAG.targetIds[1], id);
  }
  if (served > 0) {
    out[at++] = SERVED_TAG[0];
    out[at++] = SERVED_TAG[1];
    at = writeVarint(out, at, served);
    at += out.write(answer.servedModelConfigId, at);
  }
  if (at !== total) throw new Error(`PredictResponse encoder wrote ${at} of ${total} bytes`);
  return out;
}

/** A handler answers with a PredictAnswer, or with its bytes already written in slices. */
const serializeAnswer = (answer: PredictAnswer | Buffer): Buffer =>
  Buffer.isBuffer(answer) ? answer : encodePredictAnswer(answer);

/**
 * `orchestrator.v1.Predict` as this server serves it: requests are counted against the request
 * limits before they are decoded, large requests in time slices (request-decoding.ts); handlers answer with a {@link PredictAnswer},
 * which {@link encodePredictAnswer} writes as the PredictResponse every client reads.
 */
export const PredictServiceAnswers = {
  inferPointWise: {
    ...PredictService.inferPointWise,
    ...predictDecoding('point'),
    responseSerialize: serializeAnswer,
  },
  inferPairWise: {
    ...PredictService.inferPairWise,
    ...predictDecoding('pair'),
    responseSerialize: serializeAnswer,
  },
  inferSlateWise: {
    ...PredictService.inferSlateWise,
    ...predictDecoding('slate'),
    responseSerialize: serializeAnswer,
  },
};
