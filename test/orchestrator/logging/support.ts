/** Served requests to log: a model scored by the real engine, with request columns of many types. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultValue, type EncodableValue, encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import type { ModelSnapshot } from '../../../src/orchestrator/config/index.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import type { LoggingConfig } from '../../../src/orchestrator/logging/index.js';
import { SLATE_TARGET_IDS, SLATE_TARGET_INDICES } from '../../../src/orchestrator/logging/index.js';
import { type ColumnSpec, ComponentMatrix } from '../../../src/orchestrator/matrix/component-matrix.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { blendOnly, fp32, fp64, schema, testRegistry } from '../../support/orchestrator.js';

export const registry = testRegistry(
  new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-logging-')) }),
);
export const engine = new InferenceEngine(registry);

/** blendOnly (score = price × 2 + bonus, FP64) with the given logging settings; version "7". */
export function loggedModel(
  logging: Partial<LoggingConfig> = {},
  id = 'logged',
): ModelSnapshot<ExecutionContext> {
  return registry.build(id, '7', { ...blendOnly(id), logging: { logging_perc: 100, ...logging } });
}

/** Request columns of (nearly) every kind: scalars, fixed and variable vectors, strings, 64-bit ints. */
export const richColumns: readonly ColumnSpec[] = [
  { name: 'price', dataType: DataType.FP32, vectorDim: 0 },
  { name: 'emb', dataType: DataType.FP32_VECTOR, vectorDim: 3 },
  { name: 'tags', dataType: DataType.STRING_VECTOR, vectorDim: 0 },
  { name: 'name', dataType: DataType.STRING, vectorDim: 0 },
  { name: 'clicks', dataType: DataType.INT64, vectorDim: 0 },
  { name: 'half', dataType: DataType.FP16, vectorDim: 0 },
  { name: 'tiny', dataType: DataType.FP8E4M3, vectorDim: 0 },
  { name: 'flags', dataType: DataType.BOOL_VECTOR, vectorDim: 0 },
  { name: 'ok', dataType: DataType.BOOL, vectorDim: 0 },
  { name: 'counts', dataType: DataType.UINT16_VECTOR, vectorDim: 2 },
  { name: 'big', dataType: DataType.UINT64, vectorDim: 0 },
  { name: 'ids', dataType: DataType.INT64_VECTOR, vectorDim: 0 },
  { name: 'pair', dataType: DataType.STRING_VECTOR, vectorDim: 2 },
  { name: 'wide', dataType: DataType.FP64_VECTOR, vectorDim: 0 },
  { name: 'bits', dataType: DataType.BOOL_VECTOR, vectorDim: 10 },
  { name: 'small', dataType: DataType.INT16, vectorDim: 0 },
  { name: 'e5', dataType: DataType.FP8E5M2_VECTOR, vectorDim: 2 },
  { name: 'u32', dataType: DataType.UINT32, vectorDim: 0 },
  { name: 'i8v', dataType: DataType.INT8_VECTOR, vectorDim: 0 },
  { name: 'h16v', dataType: DataType.FP16_VECTOR, vectorDim: 0 },
];

/** The value of rich column `name` for target `i` (deterministic). */
export function richValue(name: string, i: number): EncodableValue {
  switch (name) {
    case 'price':
      return 1.5 + i;
    case 'emb':
      return [i, -i / 2, 0.1 * i];
    case 'tags':
      return Array.from({ length: i % 3 }, (_, k) => `tag-${i}-${k}`);
    case 'name':
      return `naïve ✓ ${i}`;
    case 'clicks':
      return BigInt(i) * 10n ** 15n - 7n;
    case 'half':
      return 0.5 + i;
    case 'tiny':
      return i * 0.25;
    case 'flags':
      return Array.from({ length: i % 5 }, (_, k) => (i + k) % 2 === 0);
    case 'ok':
      return i % 2 === 0;
    case 'counts':
      return [i, 65535 - i];
    case 'big':
      return 2n ** 64n - 1n - BigInt(i);
    case 'ids':
      return [BigInt(-i), 2n ** 62n];
    case 'pair':
      return [`l${i}`, ''];
    case 'wide':
      return Array.from({ length: i % 4 }, (_, k) => Math.PI * (k + i));
    case 'bits':
      return Array.from({ length: 10 }, (_, k) => (i + k) % 3 === 0);
    case 'small':
      return -300 * i;
    case 'e5':
      return [i * 2, -0.5];
    case 'u32':
      return 4_000_000_000 + i;
    case 'i8v':
      return Array.from({ length: i % 3 }, (_, k) => -128 + k + i);
    case 'h16v':
      return Array.from({ length: (i + 1) % 3 }, (_, k) => k + 0.5);
    default:
      throw new Error(`no rich column ${name}`);
  }
}

export const richCell = (spec: ColumnSpec, i: number): Buffer =>
  Buffer.from(encodeValue(spec.dataType, richValue(spec.name, i), spec.vectorDim));

/** A point request with `n` targets carrying every rich column, and context `bonus` and `user_id`. */
export function richRequest(n: number, modelConfigId = 'logged', trackingId = 'track-1'): PredictRequest {
  return {
    modelConfigId,
    trackingId,
    contextFeatures: [
      { ...schema('bonus', DataType.FP64), value: fp64(0.5) },
      { ...schema('user_id', DataType.STRING), value: Buffer.from('user-42') },
    ],
    targetInputSchema: richColumns.map((c) => schema(c.name, c.dataType, c.vectorDim)),
    targets: Array.from({ length: n }, (_, i) => ({
      id: `item-${i}`,
      featureValues: richColumns.map((c) => richCell(c, i)),
    })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

/** A served point-wise request. */
export async function servePoint(
  snapshot: ModelSnapshot<ExecutionContext>,
  n: number,
  trackingId = 'track-1',
): Promise<ExecutionContext> {
  const { context } = await engine.executeOn(
    snapshot,
    { pattern: 'point', request: richRequest(n, snapshot.id, trackingId) },
    trackingId,
  );
  return context;
}

/** A served slate-wise request: `slates` slates over `n` targets, each with a position_bias. */
export async function serveSlates(
  snapshot: ModelSnapshot<ExecutionContext>,
  n: number,
  slates: number[][],
): Promise<ExecutionContext> {
  const request: PredictRequest = {
    ...richRequest(n, snapshot.id),
    slateInputSchema: [schema('position_bias', DataType.FP32)],
    slates: slates.map((indices, k) => ({ slateTargetIndices: indices, featureValues: [fp32(k / 4)] })),
  };
  const { context } = await engine.executeOn(snapshot, { pattern: 'slate', request }, 'track-slate');
  return context;
}

/** A served pair-wise request over `n` targets. */
export async function servePairs(
  snapshot: ModelSnapshot<ExecutionContext>,
  n: number,
  pairs: [number, number][],
): Promise<ExecutionContext> {
  const request: PredictRequest = {
    ...richRequest(n, snapshot.id),
    pairInputSchema: [schema('pair_weight', DataType.FP64)],
    pairs: pairs.map(([a, b], k) => ({
      firstTargetIndex: a,
      secondTargetIndex: b,
      featureValues: [fp64(k)],
    })),
  };
  const { context } = await engine.executeOn(snapshot, { pattern: 'pair', request }, 'track-pair');
  return context;
}

/**
 * A context whose matrix has defaulted cells in every kind of column (fixed and variable width):
 * cell (row, column) is written unless (row + column) % 3 === 0; the score column is never
 * written, and rows 1 and 2 carry errors.
 */
export function sparseContext(snapshot: ModelSnapshot<ExecutionContext>, rows = 5): ExecutionContext {
  const matrix = new ComponentMatrix(snapshot.layout.extend(richColumns), rows);
  const ids = matrix.stringColumn(snapshot.model.config.target_id_column);
  for (let r = 0; r < rows; r++) {
    ids[r] = `sparse-${r}`;
    richColumns.forEach((spec, c) => {
      if ((r + c) % 3 !== 0) matrix.byteColumn(spec.name).set(r, richCell(spec, r));
    });
  }
  matrix.addRowError(1, 'blend failed: boom');
  matrix.addRowError(2, 'blend failed: boom');
  return {
    snapshot,
    matrix,
    slate: undefined,
    pattern: 'point',
    trackingId: 'sparse',
    deadline: Number.POSITIVE_INFINITY,
  };
}

/**
 * The bytes a log reader should get back for row `row` of column `name` of a served request:
 * the served bytes, or the type's default for a defaulted cell.
 */
export function servedCell(
  context: ExecutionContext,
  rows: 'targets' | 'pairs' | 'slates',
  name: string,
  row: number,
): { bytes: Uint8Array; defaulted: boolean } {
  if (rows !== 'targets') {
    const slate = context.slate!;
    if (name === SLATE_TARGET_INDICES) {
      return { bytes: encodeValue(DataType.INT32_VECTOR, slate.slateTargetIndices[row]!), defaulted: false };
    }
    if (name === SLATE_TARGET_IDS) {
      const ids = context.matrix.stringColumn(context.snapshot.model.config.target_id_column);
      const names = Array.from(slate.slateTargetIndices[row]!, (i) => ids[i]!);
      return { bytes: encodeValue(DataType.STRING_VECTOR, names), defaulted: false };
    }
    const column = slate.byteColumn(name);
    return cellOf(column.spec, column.get(row), column.isDefaulted(row));
  }
  const { matrix } = context;
  if (matrix.hasStringColumn(name)) {
    return { bytes: new TextEncoder().encode(matrix.stringColumn(name)[row]!), defaulted: false };
  }
  const column = matrix.byteColumn(name);
  return cellOf(column.spec, column.get(row), column.isDefaulted(row));
}

function cellOf(spec: ColumnSpec, bytes: Uint8Array, defaulted: boolean) {
  return { bytes: defaulted ? defaultValue(spec.dataType, spec.vectorDim) : bytes, defaulted };
}
