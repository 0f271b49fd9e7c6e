/**
 * FeatureInit reads a request's rows from the generated messages (small requests, every caller that
 * builds a PredictRequest) or from columns (large requests, decoded in slices: wire/request-columns.ts).
 * Both must build the same matrices, or fail with the same INVALID_ARGUMENT naming the same field.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import type { ComponentMatrix } from '../../../src/orchestrator/matrix/component-matrix.js';
import { decodePredictColumns } from '../../../src/orchestrator/wire/request-decoding.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { blendOnly, blendOnlyRequest, fp32, schema, testRegistry } from '../../support/orchestrator.js';

const registry = testRegistry(new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-columns-')) }));
const engine = new InferenceEngine(registry);
const snapshot = registry.build('blend_only', '1', blendOnly());

function request(prices: number[], extra: Partial<PredictRequest> = {}): PredictRequest {
  return blendOnlyRequest(prices, {
    targetInputSchema: [schema('price', DataType.FP32), schema('label', DataType.STRING)],
    targets: prices.map((p, i) => ({
      id: `item${i}`,
      featureValues: [fp32(p), encodeValue(DataType.STRING, `label ${i % 7}`)],
    })),
    ...extra,
  });
}

function matrixContents(matrix: ComponentMatrix) {
  return {
    rows: matrix.rowCount,
    bytes: matrix.byteColumns.map((c) => ({
      name: c.name,
      data: [...c.data],
      cells: c.cells?.map((v) => (v ? [...v] : undefined)),
      filled: [...c.filled],
    })),
    strings: matrix.stringColumns,
    errors: Array.from({ length: matrix.rowCount }, (_, r) => matrix.rowError(r)),
  };
}

async function outcome(pattern: 'point' | 'pair' | 'slate', input: PredictRequest) {
  try {
    const { context } = await engine.executeOn(snapshot, { pattern, request: input }, 't');
    return {
      matrix: matrixContents(context.matrix),
      slate: context.slate && {
        ...matrixContents(context.slate),
        indices: context.slate.slateTargetIndices.map((list) => [...list]),
      },
    };
  } catch (err) {
    const { code, message, field } = err as { code?: string; message: string; field?: string };
    return { error: { code, message, field } };
  }
}

async function assertSameBothWays(
  pattern: 'point' | 'pair' | 'slate',
  message: PredictRequest,
  label: string,
) {
  const bytes = PredictRequest.encode(message).finish();
  const columnar = await decodePredictColumns(bytes, new AbortController().signal, Number.POSITIVE_INFINITY);
  const viaMessages = await outcome(pattern, PredictRequest.decode(bytes));
  const viaColumns = await outcome(pattern, columnar);
  assert.deepEqual(viaColumns, viaMessages, label);
  return viaMessages;
}

const prices = Array.from({ length: 300 }, (_, i) => (i % 13) - 6.5);
const pairs = Array.from({ length: 500 }, (_, i) => ({
  firstTargetIndex: i % 300,
  secondTargetIndex: (i * 7 + 1) % 300,
  featureValues: [fp32(i / 10)],
}));
const slates = Array.from({ length: 200 }, (_, i) => ({
  slateTargetIndices: [i % 300, (i + 5) % 300, (i * 3) % 300],
  featureValues: [fp32(i)],
}));
const weight = [schema('weight', DataType.FP32)];

test('FeatureInit builds the same matrices from columns as from the generated messages', async () => {
  const point = await assertSameBothWays('point', request(prices), 'point');
  assert.equal(point.matrix?.rows, 300);
  const pair = await assertSameBothWays('pair', request(prices, { pairInputSchema: weight, pairs }), 'pair');
  assert.equal(pair.slate?.rows, 500);
  await assertSameBothWays('slate', request(prices, { slateInputSchema: weight, slates }), 'slate');
  // A variable-width column (FP32_VECTOR without a dimension) keeps views of the values.
  await assertSameBothWays(
    'point',
    request([1, 2], {
      targetInputSchema: [schema('price', DataType.FP32), schema('label', DataType.FP32_VECTOR)],
      targets: [
        { id: 'a', featureValues: [fp32(1), Buffer.concat([fp32(1), fp32(2)])] },
        { id: 'b', featureValues: [fp32(2), Buffer.alloc(0)] },
      ],
    }),
    'variable width',
  );
});

test('FeatureInit fails alike from columns and from messages, naming the same field', async () => {
  const broken: [string, 'point' | 'pair' | 'slate', PredictRequest][] = [
    ['no targets', 'point', request([])],
    [
      'short value',
      'point',
      request([1, 2], {
        targets: [
          { id: 'a', featureValues: [fp32(1), Buffer.from('x')] },
          { id: 'b', featureValues: [Buffer.from([1, 2, 3]), Buffer.from('y')] },
        ],
      }),
    ],
    ['value count', 'point', request([1], { targets: [{ id: 'a', featureValues: [fp32(1)] }] })],
    [
      'invalid UTF-8',
      'point',
      request([1], { targets: [{ id: 'a', featureValues: [fp32(1), Buffer.from([0xff])] }] }),
    ],
    [
      'pair index',
      'pair',
      request([1, 2], {
        pairInputSchema: weight,
        pairs: [{ firstTargetIndex: 0, secondTargetIndex: 2, featureValues: [fp32(1)] }],
      }),
    ],
    ['no pairs', 'pair', request([1, 2])],
    [
      'pair value count',
      'pair',
      request([1, 2], {
        pairInputSchema: weight,
        pairs: [{ firstTargetIndex: 0, secondTargetIndex: 1, featureValues: [] }],
      }),
    ],
    [
      'slate index',
      'slate',
      request([1, 2], {
        slateInputSchema: weight,
        slates: [{ slateTargetIndices: [0, -1], featureValues: [fp32(1)] }],
      }),
    ],
    [
      'empty slate',
      'slate',
      request([1, 2], {
        slateInputSchema: weight,
        slates: [{ slateTargetIndices: [], featureValues: [fp32(1)] }],
      }),
    ],
  ];
  for (const [label, pattern, message] of broken) {
    const result = await assertSameBothWays(pattern, message, label);
    assert.ok(result.error?.code === 'INVALID_ARGUMENT', `${label}: ${JSON.stringify(result)}`);
  }
});
