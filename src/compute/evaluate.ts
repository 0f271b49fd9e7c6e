/**
 * Runs a compiled program over columns. The compiler has already decided where every intermediate
 * lives, so a call only binds inputs and scratch buffers to registers and runs one kernel per
 * operator: no per-row dispatch, no per-operator allocation.
 */
import { invalidArgument, type LatticeError } from '../platform/errors.js';
import {
  binaryScalarVector,
  binaryVectorScalar,
  binaryVectorVector,
  OK,
  unary,
  type Vector,
} from './functions.js';
import type { Instruction, Program } from './program.js';

export type Precision = 'fp32' | 'fp64';

/**
 * Lets a long evaluation give its host's event loop a turn between operators (each operator is one
 * pass over every row): `due` says whether it is time, `pause` waits for the turn and rejects to stop
 * the evaluation (the caller was cancelled).
 */
export interface EvaluationPacer {
  due(): boolean;
  pause(): Promise<void>;
}

/** `fp32`/`f32` → fp32; `fp64`/`f64`/absent → fp64 (the numerix rule), case-insensitive. */
export function parsePrecision(text: string | undefined): Precision {
  if (text === undefined) return 'fp64';
  switch (text.toLowerCase()) {
    case 'fp32':
    case 'f32':
      return 'fp32';
    case 'fp64':
    case 'f64':
      return 'fp64';
    default:
      throw invalidArgument(`unknown precision ${JSON.stringify(text)}; expected fp32, f32, fp64 or f64`);
  }
}

/** Above this many rows a call's scratch is not kept for the next call, so one huge request does not pin memory. */
const MAX_RETAINED_ROWS = 1 << 16;

type VectorConstructor = Float32ArrayConstructor | Float64ArrayConstructor;

/** Scratch of one precision, sized for `capacity` rows. */
class Scratch {
  readonly temps: Vector[];
  /** fp32 copies of fp64 inputs, by variable index, made on first need. */
  readonly conversions: (Vector | undefined)[];
  /** Scalar registers: literals and results of operators on constants. */
  readonly scalars: Vector;
  /** One-row column through which a constant operand runs the same kernels as a column. */
  readonly unit: Vector;
  readonly sorted: Float64Array;

  constructor(
    readonly type: VectorConstructor,
    readonly capacity: number,
    program: Program,
  ) {
    this.temps = Array.from({ length: program.tempCount }, () => new type(capacity));
    this.conversions = new Array<Vector | undefined>(program.variables.length).fill(undefined);
    this.scalars = new type(program.scalarCount);
    this.unit = new type(1);
    this.sorted = new Float64Array(program.usesSort ? Math.max(capacity, 1) : 1);
  }

  conversion(variable: number): Vector {
    let buffer = this.conversions[variable];
    if (buffer === undefined) {
      buffer = new this.type(this.capacity);
      this.conversions[variable] = buffer;
    }
    return buffer;
  }
}

const EMPTY = new Float64Array(0);

/**
 * Evaluates one program, keeping scratch buffers per precision between calls. Safe to share:
 * evaluation is synchronous and never re-entered, so one set of buffers per program suffices.
 */
export class Evaluator {
  private readonly cached: { fp32: Scratch | undefined; fp64: Scratch | undefined } = {
    fp32: undefined,
    fp64: undefined,
  };
  /** Vector registers: inputs, then the output, then temporaries (see `Program`). */
  private readonly registers: Vector[];

  constructor(private readonly program: Program) {
    this.registers = new Array<Vector>(program.variables.length + 1 + program.tempCount).fill(EMPTY);
  }

  /**
   * Writes the first `rows` results into `output`; its type picks the precision. `output` may be
   * one of the inputs: only the last operator writes it, reading each row before writing it.
   */
  evaluate<T extends Vector>(inputs: Readonly<Record<string, Vector>>, rows: number, output: T): T {
    checkShape(rows, output);
    const scratch = this.scratch(output instanceof Float32Array ? 'fp32' : 'fp64', rows);
    const registers = this.registers;
    try {
      if (!this.bind(inputs, rows, output, scratch, registers)) return output;
      for (const instruction of this.program.instructions) this.run(instruction, scratch, rows, registers);
      return this.finish(rows, output, scratch, registers);
    } finally {
      // Do not keep the caller's columns (or the output) alive until the next call.
      registers.fill(EMPTY);
    }
  }

  /**
   * As `evaluate`, asking `pacer` between operators whether to pause. It has scratch buffers and
   * registers of its own, so evaluations of one program may interleave while they pause.
   */
  async evaluatePaced<T extends Vector>(
    inputs: Readonly<Record<string, Vector>>,
    rows: number,
    output: T,
    pacer: EvaluationPacer,
  ): Promise<T> {
    checkShape(rows, output);
    const scratch = new Scratch(
      output instanceof Float32Array ? Float32Array : Float64Array,
      rows,
      this.program,
    );
    const registers = new Array<Vector>(this.registers.length).fill(EMPTY);
    if (!this.bind(inputs, rows, output, scratch, registers)) return output;
    for (const instruction of this.program.instructions) {
      if (pacer.due()) await pacer.pause();
      this.run(instruction, scratch, rows, registers);
    }
    return this.finish(rows, output, scratch, registers);
  }

  /** Binds inputs, output and temporaries to registers; false when there are no rows to compute. */
  private bind(
    inputs: Readonly<Record<string, Vector>>,
    rows: number,
    output: Vector,
    scratch: Scratch,
    registers: Vector[],
  ): boolean {
    const { program } = this;
    for (let v = 0; v < program.variables.length; v++) {
      registers[v] = this.bindInput(inputs, v, rows, scratch);
    }
    if (rows === 0) return false;
    registers[program.variables.length] = output;
    for (let t = 0; t < program.tempCount; t++) {
      registers[program.variables.length + 1 + t] = scratch.temps[t]!;
    }
    const scalars = scratch.scalars;
    for (const literal of program.literals) scalars[literal.register] = literal.value;
    return true;
  }

  private finish<T extends Vector>(rows: number, output: T, scratch: Scratch, registers: Vector[]): T {
    const { program } = this;
    const result = program.result;
    if (!result.vector) output.fill(scratch.scalars[result.index]!, 0, rows);
    else if (result.index !== program.variables.length)
      output.set(registers[result.index]!.subarray(0, rows));
    return output;
  }

  private scratch(precision: Precision, rows: number): Scratch {
    const cached = this.cached[precision];
    if (cached !== undefined && cached.capacity >= rows) return cached;
    const type = precision === 'fp32' ? Float32Array : Float64Array;
    const fresh = new Scratch(type, rows, this.program);
    if (rows <= MAX_RETAINED_ROWS) this.cached[precision] = fresh;
    return fresh;
  }

  private bindInput(
    inputs: Readonly<Record<string, Vector>>,
    variable: number,
    rows: number,
    scratch: Scratch,
  ): Vector {
    const name = this.program.variables[variable]!;
    const column: unknown = Object.hasOwn(inputs, name) ? inputs[name] : undefined;
    if (!(column instanceof Float32Array || column instanceof Float64Array)) {
      throw invalidArgument(
        column === undefined
          ? `input column \`${name}\` is missing for \`${this.program.source}\``
          : `input column \`${name}\` is not a Float32Array or Float64Array`,
        name,
      );
    }
    if (column.length < rows) {
      throw invalidArgument(
        `input column \`${name}\` has ${column.length} values; expected at least ${rows} (rows) for \`${this.program.source}\``,
        name,
      );
    }
    if (column instanceof scratch.type) return column;
    if (column instanceof Float32Array) return column; // fp32 values are exact in fp64
    // fp64 input in fp32 mode: round once so every operator sees fp32 operands.
    const converted = scratch.conversion(variable);
    for (let i = 0; i < rows; i++) converted[i] = column[i]!;
    return converted;
  }

  private run(instruction: Instruction, scratch: Scratch, rows: number, registers: Vector[]): void {
    const { scalars, unit, sorted } = scratch;
    const { a, out } = instruction;
    let failed: number;
    if (instruction.kind === 'unary') {
      if (a.vector) {
        failed = unary(instruction.fn, registers[a.index]!, registers[out]!, rows, sorted);
      } else {
        // A constant is a column of equal values, so one row computes every row.
        unit[0] = scalars[a.index]!;
        failed = unary(instruction.fn, unit, unit, 1, sorted);
        scalars[out] = unit[0]!;
      }
    } else {
      const { b, op } = instruction;
      if (a.vector && b.vector) {
        failed = binaryVectorVector(op, registers[a.index]!, registers[b.index]!, registers[out]!, rows);
      } else if (a.vector) {
        failed = binaryVectorScalar(op, registers[a.index]!, scalars[b.index]!, registers[out]!, rows);
      } else if (b.vector) {
        failed = binaryScalarVector(op, scalars[a.index]!, registers[b.index]!, registers[out]!, rows);
      } else {
        unit[0] = scalars[a.index]!;
        failed = binaryVectorScalar(op, unit, scalars[b.index]!, unit, 1);
        scalars[out] = unit[0]!;
      }
    }
    if (failed !== OK) throw this.rowError(instruction, failed, scratch, registers);
  }

  /** The error for `instruction` failing at `row`; operands at that row are still intact. */
  private rowError(
    instruction: Instruction,
    row: number,
    scratch: Scratch,
    registers: readonly Vector[],
  ): LatticeError {
    const at = `at row ${row} in \`${this.program.source}\` (token ${instruction.token})`;
    const operandValue = (operand: Instruction['a']): number =>
      operand.vector ? registers[operand.index]![row]! : scratch.scalars[operand.index]!;
    if (instruction.kind === 'unary') {
      return invalidArgument(`log of non-positive value ${operandValue(instruction.a)} ${at}`);
    }
    if (instruction.op === '/') return invalidArgument(`division by zero ${at}`);
    const x = operandValue(instruction.a);
    const y = operandValue(instruction.b);
    const bad = x !== 0 && x !== 1 ? x : y;
    return invalidArgument(`operator ${instruction.op} needs 0/1 operands, got ${bad} ${at}`);
  }
}

function checkShape(rows: number, output: Vector): void {
  if (!Number.isSafeInteger(rows) || rows < 0) {
    throw invalidArgument(`rows must be a non-negative integer, got ${rows}`);
  }
  if (output.length < rows) {
    throw invalidArgument(`output has ${output.length} elements; expected at least ${rows} (rows)`);
  }
}
