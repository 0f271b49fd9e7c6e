import { LatticeError } from '../platform/errors.js';

/** Where a strided copy reads or writes: a byte buffer of `size`-byte elements, row by row. */
export interface ElementRuns {
  readonly bytes: Uint8Array;
  /** Element index of row 0's first element. */
  readonly start: number;
  /** Elements from one row to the next. */
  readonly stride: number;
}

/**
 * Copies `rows` runs of `run` fixed-width elements of `size` bytes (1, 2, 4 or 8) as raw bytes: run r
 * reads from `from` at row `fromRows[r]` (or r) and writes `to` at row r. Gathering matrix columns
 * into a tensor and scattering a tensor's values into columns both reduce to this. Bytes are never
 * interpreted, so 64-bit integers and NaN payloads arrive exactly; aligned buffers copy in 32-bit
 * (or 16-bit) units, without any per-element allocation.
 */
export function copyElementRuns(
  size: number,
  run: number,
  rows: number,
  from: ElementRuns,
  to: ElementRuns,
  fromRows: Int32Array | null = null,
): void {
  if (rows === 0 || run === 0) return;
  let unit = size >= 4 ? 4 : size;
  if (from.bytes.byteOffset % unit !== 0 || to.bytes.byteOffset % unit !== 0) unit = 1;
  const k = size / unit;
  const lastFrom = fromRows ? maxRow(fromRows, rows) : rows - 1;
  checkRange(from, lastFrom, run, size, 'source');
  checkRange(to, rows - 1, run, size, 'target');
  const src = unitView(from.bytes, unit);
  const dst = unitView(to.bytes, unit);
  const n = run * k;
  const fromStride = from.stride * k;
  const toStride = to.stride * k;
  const fromStart = from.start * k;
  const toStart = to.start * k;
  if (n === 1) {
    copyOnes(src, dst, rows, fromStart, fromStride, toStart, toStride, fromRows);
    return;
  }
  for (let r = 0; r < rows; r++) {
    const a = fromStart + (fromRows ? fromRows[r]! : r) * fromStride;
    const b = toStart + r * toStride;
    for (let i = 0; i < n; i++) dst[b + i] = src[a + i]!;
  }
}

type UnitArray = Uint8Array | Uint16Array | Uint32Array;

function copyOnes(
  src: UnitArray,
  dst: UnitArray,
  rows: number,
  fromStart: number,
  fromStride: number,
  toStart: number,
  toStride: number,
  fromRows: Int32Array | null,
): void {
  if (fromRows) {
    for (let r = 0; r < rows; r++) dst[toStart + r * toStride] = src[fromStart + fromRows[r]! * fromStride]!;
  } else {
    for (let r = 0; r < rows; r++) dst[toStart + r * toStride] = src[fromStart + r * fromStride]!;
  }
}

function unitView(bytes: Uint8Array, unit: number): UnitArray {
  if (unit === 1) return bytes;
  const length = Math.floor(bytes.byteLength / unit);
  return unit === 2
    ? new Uint16Array(bytes.buffer, bytes.byteOffset, length)
    : new Uint32Array(bytes.buffer, bytes.byteOffset, length);
}

function maxRow(rowsOf: Int32Array, rows: number): number {
  let max = -1;
  for (let r = 0; r < rows; r++) if (rowsOf[r]! > max) max = rowsOf[r]!;
  return max;
}

/** A sizing bug in the caller must fail loudly: typed-array writes past the end are silently dropped. */
function checkRange(runs: ElementRuns, lastRow: number, run: number, size: number, which: string): void {
  const end = (runs.start + lastRow * runs.stride + run) * size;
  if (runs.start < 0 || end > runs.bytes.byteLength) {
    throw new LatticeError(
      'INTERNAL',
      `strided copy ${which} out of range: needs ${end} bytes, has ${runs.bytes.byteLength}`,
    );
  }
}
