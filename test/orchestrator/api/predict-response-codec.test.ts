/** The hand-written answer encoders (in one go and in time slices) must write exactly what the generated encoders write. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OrchestratorResponseProto } from '../../../src/gen/orchestrator/v1/orchestrator.js';
import { PredictResponse } from '../../../src/gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../../src/gen/orchestrator/v1/types.js';
import { encodeLegacyResponseInSlices } from '../../../src/orchestrator/wire/legacy-response-codec.js';
import {
  type AnswerColumn,
  encodePredictAnswer,
  encodePredictAnswerInSlices,
  NO_SCORES,
  type PredictAnswer,
  type ScoreTable,
  toPredictResponse,
} from '../../../src/orchestrator/wire/predict-response-codec.js';
import { seededRandom } from '../../../src/platform/random.js';

const random = seededRandom(5);
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
const texts = ['', 'ctr', 'final_score', 'catalog:stats:price', 'ü→score', 'x'.repeat(200), '😀 emoji'];
const bytes = (length: number) => Uint8Array.from({ length }, () => Math.floor(random() * 256));

function schema(): FeatureSchema {
  return { name: pick(texts), dataType: pick([0, 1, 7, 12, 30]), vectorDim: pick([0, 0, 3, 200, 70_000]) };
}

/** Fixed-width columns (1 to 40 bytes a value) and variable ones (0 to 20,000 bytes a value). */
function column(rows: number): AnswerColumn {
  if (random() < 0.6) {
    const width = pick([1, 4, 8, 40]);
    return { width, data: bytes(rows * width) };
  }
  const values = Array.from({ length: rows }, () => bytes(pick([0, 4, 130, 20_000])));
  return { width: undefined, value: (row) => values[row]! };
}

function scoreTable(): ScoreTable {
  const rows = pick([0, 1, 5, 100]);
  const columns = Array.from({ length: pick([0, 1, 3]) }, () => column(rows));
  const errors = Array.from({ length: rows }, () =>
    pick(['', '', 'user_category: entity u1|c3 not found', 'é'.repeat(70)]),
  );
  return {
    schema: columns.map(schema),
    columns,
    rows,
    rowError: (row) => errors[row]!,
  };
}

test('encodePredictAnswer equals the generated encoder, byte for byte, over random answers', () => {
  for (let i = 0; i < 300; i++) {
    const answer: PredictAnswer = {
      trackingId: pick(texts),
      servedModelConfigId: pick(texts),
      target: scoreTable(),
      pair: pick([NO_SCORES, scoreTable()]),
      slate: pick([NO_SCORES, scoreTable()]),
    };
    const ours = encodePredictAnswer(answer);
    const generated = Buffer.from(PredictResponse.encode(toPredictResponse(answer)).finish());
    assert.ok(ours.equals(generated), `answer ${i} differs`);
  }
});

test('negative schema numbers (never produced by the service) fall back to the generated encoder', () => {
  const answer: PredictAnswer = {
    trackingId: 't',
    servedModelConfigId: 'arm_b',
    target: {
      schema: [{ name: 'v', dataType: 1, vectorDim: -1 }],
      columns: [{ width: 1, data: Uint8Array.of(7) }],
      rows: 1,
      rowError: () => 'e',
    },
    pair: NO_SCORES,
    slate: NO_SCORES,
  };
  const ours = encodePredictAnswer(answer);
  assert.ok(ours.equals(Buffer.from(PredictResponse.encode(toPredictResponse(answer)).finish())));
  assert.deepEqual(PredictResponse.decode(ours), toPredictResponse(answer));
});

test('encodePredictAnswerInSlices writes the same bytes for answers past one slice (10,000 rows)', async () => {
  const rows = 10_000;
  const widths = [4, 8];
  const columns: AnswerColumn[] = widths.map((width) => ({ width, data: bytes(rows * width) }));
  const errors = Array.from({ length: rows }, (_, r) => (r % 7 === 0 ? 'features: defaulted' : ''));
  const table: ScoreTable = {
    schema: columns.map((_, i) => ({ name: `c${i}`, dataType: 7, vectorDim: 0 })),
    columns,
    rows,
    rowError: (row) => errors[row]!,
  };
  const answer: PredictAnswer = {
    trackingId: 't',
    servedModelConfigId: 'arm_b',
    target: table,
    pair: table,
    slate: NO_SCORES,
  };
  const sliced = await encodePredictAnswerInSlices(
    answer,
    new AbortController().signal,
    Number.POSITIVE_INFINITY,
  );
  assert.ok(sliced.equals(encodePredictAnswer(answer)));
  assert.ok(sliced.equals(Buffer.from(PredictResponse.encode(toPredictResponse(answer)).finish())));
});

test('the legacy answer encoded in slices equals the generated encoder, byte for byte', async () => {
  for (const rows of [0, 1, 5000]) {
    const response = {
      componentData: Array.from({ length: rows }, (_, r) => ({
        data: [`id${r}`, pick(texts), String(random())],
      })),
      error: { message: rows === 0 ? '' : pick(texts) },
      servedModelConfigId: pick(texts),
    };
    const sliced = await encodeLegacyResponseInSlices(
      response,
      new AbortController().signal,
      Number.POSITIVE_INFINITY,
    );
    assert.ok(
      sliced.equals(Buffer.from(OrchestratorResponseProto.encode(response).finish())),
      `${rows} rows`,
    );
  }
});
