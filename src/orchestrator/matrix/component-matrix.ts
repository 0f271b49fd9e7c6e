import { DataType, dataTypeInfo, fixedWidth } from '../../datatypes/data-type.js';
import { LatticeError } from '../../platform/errors.js';

/** A typed byte column: its name (`entity:group:feature`), type and vector dimension (0 = scalar or variable). */
export interface ColumnSpec {
  readonly name: string;
  readonly dataType: DataType;
  readonly vectorDim: number;
}

const ALIGN = 8;
/** Extended layouts remembered per layout; beyond this, requests use many schemas and the memo restarts. */
const MAX_EXTENSIONS = 64;
const alignUp = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

/**
 * The columns of a matrix and where each fixed-width column lives in the per-request arena. Built
 * once per model config (plus a request's own input columns), then every request allocates its
 * whole matrix with one ArrayBuffer.
 */
export class MatrixLayout {
  readonly columns: readonly ColumnSpec[];
  readonly stringColumns: readonly string[];
  private readonly byteIndex = new Map<string, number>();
  private readonly stringIndex = new Map<string, number>();
  /** Bytes per row of fixed-width columns; each column's block starts 8-byte aligned. */
  readonly widths: readonly (number | undefined)[];
  private readonly extensions = new Map<string, MatrixLayout>();

  constructor(columns: readonly ColumnSpec[], stringColumns: readonly string[] = []) {
    this.columns = columns;
    this.stringColumns = stringColumns;
    columns.forEach((column, i) => {
      if (this.byteIndex.has(column.name)) {
        throw new LatticeError('INVALID_ARGUMENT', `column "${column.name}" is declared twice`, {
          field: column.name,
        });
      }
      this.byteIndex.set(column.name, i);
    });
    stringColumns.forEach((name, i) => {
      if (this.stringIndex.has(name)) {
        throw new LatticeError('INVALID_ARGUMENT', `string column "${name}" is declared twice`, {
          field: name,
        });
      }
      this.stringIndex.set(name, i);
    });
    this.widths = columns.map((c) => fixedWidth(c.dataType, c.vectorDim));
  }

  /**
   * A layout with more columns appended (a request's input features after the config's columns).
   * Requests to one model mostly repeat the same input schema, so extended layouts are memoized
   * (a bounded number per layout).
   */
  extend(columns: readonly ColumnSpec[], stringColumns: readonly string[] = []): MatrixLayout {
    if (columns.length === 0 && stringColumns.length === 0) return this;
    let signature = stringColumns.join('\u0001');
    for (const c of columns) signature += `\u0000${c.name}\u0001${c.dataType}\u0001${c.vectorDim}`;
    const cached = this.extensions.get(signature);
    if (cached) return cached;
    const extended = new MatrixLayout(
      [...this.columns, ...columns],
      [...this.stringColumns, ...stringColumns],
    );
    if (this.extensions.size >= MAX_EXTENSIONS) this.extensions.clear();
    this.extensions.set(signature, extended);
    return extended;
  }

  byteColumnIndex(name: string): number {
    return this.byteIndex.get(name) ?? -1;
  }

  stringColumnIndex(name: string): number {
    return this.stringIndex.get(name) ?? -1;
  }

  /** Arena bytes for `rows` rows: every fixed-width column's block, 8-byte aligned, then one filled flag per cell. */
  arenaBytes(rows: number): number {
    let total = 0;
    for (const width of this.widths) if (width !== undefined) total += alignUp(width * rows);
    return total + this.columns.length * rows;
  }
}

const EMPTY = new Uint8Array(0);

/**
 * One typed column of a matrix. Fixed-width values live contiguously in `data` (row r at
 * r × width); variable-width values (strings, vectors without a fixed dimension) in `cells`.
 * `filled[r]` is 1 once a real value is written; a cell never written holds the type's default
 * (zero bytes, or empty) and counts as defaulted.
 */
export class ByteColumn {
  readonly width: number | undefined;
  readonly data: Uint8Array;
  readonly cells: (Uint8Array | undefined)[] | undefined;
  readonly filled: Uint8Array;
  private f32: Float32Array | undefined;
  private f64: Float64Array | undefined;

  constructor(
    readonly spec: ColumnSpec,
    readonly rows: number,
    width: number | undefined,
    arena: ArrayBuffer,
    offset: number,
    filledOffset: number,
  ) {
    this.width = width;
    this.filled = new Uint8Array(arena, filledOffset, rows);
    if (this.width === undefined) {
      this.data = EMPTY;
      this.cells = new Array<Uint8Array | undefined>(rows);
    } else {
      this.data = new Uint8Array(arena, offset, this.width * rows);
      this.cells = undefined;
    }
  }

  get name(): string {
    return this.spec.name;
  }

  /** The value bytes of `row` (a view, not a copy, for fixed-width columns). */
  get(row: number): Uint8Array {
    if (this.width === undefined) return this.cells![row] ?? EMPTY;
    return this.data.subarray(row * this.width, (row + 1) * this.width);
  }

  /** Writes `row`; a fixed-width value of the wrong length is a programming error, never truncated. */
  set(row: number, value: Uint8Array): void {
    const width = this.width;
    if (width === undefined) {
      this.cells![row] = value;
    } else {
      if (value.length !== width) {
        throw new LatticeError(
          'INTERNAL',
          `column "${this.spec.name}" (${DataType[this.spec.dataType]}) takes ${width} bytes per value, got ${value.length}`,
        );
      }
      const data = this.data;
      const at = row * width;
      // Most values are 1–8 bytes, where a byte loop beats TypedArray#set's call overhead.
      if (width <= 16) for (let i = 0; i < width; i++) data[at + i] = value[i]!;
      else data.set(value, at);
    }
    this.filled[row] = 1;
  }

  /**
   * Writes `row` from `length` bytes of `source` at `from` (a request value in the request's bytes):
   * a fixed-width value is copied without a view of it; a variable-width one is kept as a view.
   */
  setFrom(row: number, source: Uint8Array, from: number, length: number): void {
    const width = this.width;
    if (width === undefined || width > 16 || length !== width) {
      this.set(row, source.subarray(from, from + length));
      return;
    }
    const data = this.data;
    const at = row * width;
    for (let i = 0; i < width; i++) data[at + i] = source[from + i]!;
    this.filled[row] = 1;
  }

  /** Writes the same value into every row (a context feature broadcast to all targets). */
  broadcast(value: Uint8Array): void {
    for (let row = 0; row < this.rows; row++) this.set(row, value);
  }

  /** Marks a row written after a bulk write into `data` (or a typed view of it). */
  markFilled(row: number): void {
    this.filled[row] = 1;
  }

  /** Marks every row written after a bulk write of the whole column. */
  markAllFilled(): void {
    this.filled.fill(1);
  }

  /** Every cell back to the type's default (zero bytes, or empty), none marked written. */
  reset(): void {
    if (this.cells) this.cells.fill(undefined);
    else this.data.fill(0);
    this.filled.fill(0);
  }

  isDefaulted(row: number): boolean {
    return this.filled[row] === 0;
  }

  /** A Float32Array over an FP32 scalar column's data (aligned, no copy); undefined for other types. */
  float32(): Float32Array | undefined {
    if (this.spec.dataType !== DataType.FP32 || this.width !== 4) return undefined;
    this.f32 ??= new Float32Array(this.data.buffer, this.data.byteOffset, this.rows);
    return this.f32;
  }

  /** A Float64Array over an FP64 scalar column's data (aligned, no copy); undefined for other types. */
  float64(): Float64Array | undefined {
    if (this.spec.dataType !== DataType.FP64 || this.width !== 8) return undefined;
    this.f64 ??= new Float64Array(this.data.buffer, this.data.byteOffset, this.rows);
    return this.f64;
  }
}

/**
 * The per-request 2-D structure every component reads and writes: one row per target (or per
 * pair/slate in SlateData), typed byte columns and string columns. Sized once when the request
 * starts; components write disjoint columns (the config validator guarantees one producer per
 * column), so nothing is ever copied or resized.
 */
export class ComponentMatrix {
  readonly byteColumns: readonly ByteColumn[];
  readonly stringColumns: readonly string[][];
  private readonly errors: (string[] | undefined)[];

  constructor(
    readonly layout: MatrixLayout,
    readonly rowCount: number,
  ) {
    const arena = new ArrayBuffer(layout.arenaBytes(rowCount));
    let offset = 0;
    let filledOffset = arena.byteLength - layout.columns.length * rowCount;
    this.byteColumns = layout.columns.map((spec, i) => {
      const width = layout.widths[i];
      const column = new ByteColumn(spec, rowCount, width, arena, offset, filledOffset);
      if (width !== undefined) offset += alignUp(width * rowCount);
      filledOffset += rowCount;
      return column;
    });
    this.stringColumns = layout.stringColumns.map(() => new Array<string>(rowCount).fill(''));
    this.errors = new Array<string[] | undefined>(rowCount);
  }

  /** The byte column `name`; INTERNAL when the layout has none (the config validator should have caught it). */
  byteColumn(name: string): ByteColumn {
    const index = this.layout.byteColumnIndex(name);
    if (index < 0) throw new LatticeError('INTERNAL', `the matrix has no byte column "${name}"`);
    return this.byteColumns[index]!;
  }

  hasByteColumn(name: string): boolean {
    return this.layout.byteColumnIndex(name) >= 0;
  }

  /** The string column `name` (one string per row); INTERNAL when the layout has none. */
  stringColumn(name: string): string[] {
    const index = this.layout.stringColumnIndex(name);
    if (index < 0) throw new LatticeError('INTERNAL', `the matrix has no string column "${name}"`);
    return this.stringColumns[index]!;
  }

  hasStringColumn(name: string): boolean {
    return this.layout.stringColumnIndex(name) >= 0;
  }

  /** Records that `row` was scored with defaulted inputs or failed; `reason` names the component. */
  addRowError(row: number, reason: string): void {
    const list = this.errors[row];
    if (list === undefined) this.errors[row] = [reason];
    else if (!list.includes(reason)) list.push(reason);
  }

  /** Marks every row (a component failed for the whole request). */
  addErrorToAllRows(reason: string): void {
    for (let row = 0; row < this.rowCount; row++) this.addRowError(row, reason);
  }

  /** The row's errors joined for `Score.error`; empty when the row is clean. */
  rowError(row: number): string {
    return this.errors[row]?.join('; ') ?? '';
  }
}

/** Every slate's target rows back to back: slate s's are `rows` from `starts[s]` to `starts[s + 1]` (exclusive). */
export interface SlateTargets {
  readonly starts: Int32Array;
  readonly rows: Int32Array;
}

function flatten(lists: readonly Int32Array[]): SlateTargets {
  const starts = new Int32Array(lists.length + 1);
  for (let s = 0; s < lists.length; s++) starts[s + 1] = starts[s]! + lists[s]!.length;
  const rows = new Int32Array(starts[lists.length]!);
  for (let s = 0; s < lists.length; s++) rows.set(lists[s]!, starts[s]!);
  return { starts, rows };
}

/**
 * The pair/slate view of a request: one row per pair or slate, each listing the target rows it
 * groups, with its own columns for slate-level inputs and per-slate scores. The target rows of all
 * slates are held in two arrays (no array per slate: a request has up to 100,000).
 */
export class SlateData extends ComponentMatrix {
  readonly targets: SlateTargets;
  private lists: Int32Array[] | undefined;

  constructor(layout: MatrixLayout, targets: readonly Int32Array[] | SlateTargets) {
    const flat = Array.isArray(targets)
      ? flatten(targets as readonly Int32Array[])
      : (targets as SlateTargets);
    super(layout, flat.starts.length - 1);
    this.targets = flat;
  }

  /** The target rows of slate `s` (a view). */
  targetsOf(s: number): Int32Array {
    return this.targets.rows.subarray(this.targets.starts[s]!, this.targets.starts[s + 1]!);
  }

  /** Every slate's target rows, as views made on first use (logs, tests); serving reads {@link targetsOf}. */
  get slateTargetIndices(): readonly Int32Array[] {
    this.lists ??= Array.from({ length: this.rowCount }, (_, s) => this.targetsOf(s));
    return this.lists;
  }
}

/** Bytes of the default value of a column's type (used for defaulted cells of variable-width columns). */
export function isNumericColumn(spec: ColumnSpec): boolean {
  return dataTypeInfo(spec.dataType).numeric;
}
