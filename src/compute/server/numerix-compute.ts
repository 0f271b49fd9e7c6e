/**
 * One numerix Compute call, transport aside: validate the table, find the compute_id's expression,
 * turn rows into typed columns named by the schema, evaluate once over all rows, and answer
 * `[id, score]` per row in the request's format. Every failure a caller can cause is an answer in the
 * response's `error` arm, as numerix does; only a bug throws.
 */
import type { NumerixRequestProto, NumerixResponseProto, Score } from '../../gen/numerix/numerix.js';
import { invalidArgument, isLatticeError } from '../../platform/errors.js';
import { type Precision, parsePrecision } from '../index.js';
import type { ComputeExpression } from './expression-registry.js';
import { encodeScores, formatScore, parseDecimal, valueBytes } from './numerix-values.js';

export type ComputeOutcome = 'ok' | 'invalid_request' | 'unknown_compute_id' | 'evaluation_error';

export interface ComputeResult {
  readonly response: NumerixResponseProto;
  readonly outcome: ComputeOutcome;
  /** The expression used; undefined when the request was rejected before the lookup or the id is unknown. */
  readonly expression: ComputeExpression | undefined;
  readonly rows: number;
}

/** Finds the expression serving a compute_id (the registry's `get`). */
export type ExpressionLookup = (computeId: string) => ComputeExpression | undefined;

type Column = Float32Array | Float64Array;

/** A request that passed the structural checks: every row has one value per schema column, all in one format. */
type ScoreTable =
  | { readonly format: 'string'; readonly rows: readonly (readonly string[])[] }
  | { readonly format: 'bytes'; readonly rows: readonly (readonly Uint8Array[])[] };

interface ValidatedRequest {
  readonly computeId: string;
  readonly schema: readonly string[];
  /** The request's data_type; undefined when absent or empty. */
  readonly precision: Precision | undefined;
  readonly table: ScoreTable;
}

export function computeNumerix(request: NumerixRequestProto, lookup: ExpressionLookup): ComputeResult {
  let validated: ValidatedRequest;
  try {
    validated = validateRequest(request);
  } catch (err) {
    return failure('invalid_request', requestError(err), undefined);
  }
  const { computeId, schema, table } = validated;
  const compute = lookup(computeId);
  if (compute === undefined) {
    return failure('unknown_compute_id', `No expression configured for compute_id: ${computeId}`, undefined);
  }
  const precision = validated.precision ?? compute.precision ?? 'fp64';
  const rows = table.rows.length;

  let inputs: Record<string, Column>;
  try {
    const bound = variableColumns(compute, schema);
    const columns = readColumns(schema, table, precision);
    // No prototype, so a variable named like an Object.prototype member is an ordinary key.
    inputs = Object.create(null) as Record<string, Column>;
    for (const [variable, column] of bound) inputs[variable] = columns[column - 1]!;
  } catch (err) {
    return failure('invalid_request', requestError(err), compute);
  }

  let scores: Column;
  try {
    scores = compute.expression.evaluate(inputs, rows, precision);
  } catch (err) {
    // Undefined operations (division by zero, log of a non-positive value, & | on non-0/1) name the row.
    if (!isLatticeError(err, 'INVALID_ARGUMENT')) throw err;
    return failure('evaluation_error', err.message, compute);
  }

  const computationScores: Score[] = new Array<Score>(rows);
  if (table.format === 'string') {
    for (let row = 0; row < rows; row++) {
      computationScores[row] = {
        stringData: { values: [table.rows[row]![0]!, formatScore(scores[row]!, precision)] },
      };
    }
  } else {
    const encoded = encodeScores(scores);
    for (let row = 0; row < rows; row++) {
      computationScores[row] = { byteData: { values: [table.rows[row]![0]!, encoded[row]!] } };
    }
  }
  return {
    response: { computationScoreData: { schema: [schema[0]!, 'score'], computationScores } },
    outcome: 'ok',
    expression: compute,
    rows,
  };
}

function failure(
  outcome: ComputeOutcome,
  message: string,
  expression: ComputeExpression | undefined,
): ComputeResult {
  return { response: { error: { message } }, outcome, expression, rows: 0 };
}

function requestError(err: unknown): string {
  if (!isLatticeError(err, 'INVALID_ARGUMENT')) throw err;
  return `Request validation failed: ${err.message}`;
}

/** Checks everything that does not depend on the expression: ids, schema, row formats and widths. */
function validateRequest(request: NumerixRequestProto): ValidatedRequest {
  const data = request.entityScoreData;
  if (data === undefined) throw invalidArgument('Missing entity_score_data');
  const { computeId, schema, entityScores } = data;
  if (computeId === '') throw invalidArgument('Empty compute_id');
  if (schema.length === 0) throw invalidArgument('Empty schema (schema[0] names the id column)');
  if (entityScores.length === 0) throw invalidArgument('No rows (entity_scores is empty)');

  let precision: Precision | undefined;
  if (data.dataType !== undefined && data.dataType !== '') {
    try {
      precision = parsePrecision(data.dataType);
    } catch (err) {
      throw invalidArgument(`data_type: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  const seen = new Map<string, number>();
  for (let column = 1; column < schema.length; column++) {
    const name = schema[column]!;
    const first = seen.get(name);
    if (first !== undefined) {
      throw invalidArgument(
        `schema column \`${name}\` appears twice (schema[${first}] and schema[${column}])`,
      );
    }
    seen.set(name, column);
  }

  const formatOf = (score: Score): 'string' | 'bytes' | undefined =>
    score.byteData !== undefined ? 'bytes' : score.stringData !== undefined ? 'string' : undefined;
  const format = formatOf(entityScores[0]!);
  if (format === undefined) throw invalidArgument('row 0 has neither string_data nor byte_data');
  const rows: (readonly string[] | readonly Uint8Array[])[] = new Array(entityScores.length);
  for (let row = 0; row < entityScores.length; row++) {
    const score = entityScores[row]!;
    const rowFormat = formatOf(score);
    if (rowFormat !== format) {
      throw invalidArgument(
        rowFormat === undefined
          ? `row ${row} has neither string_data nor byte_data`
          : `row ${row} is ${rowFormat === 'string' ? 'string_data' : 'byte_data'} but row 0 is ${
              format === 'string' ? 'string_data' : 'byte_data'
            }; every row must use the same format`,
      );
    }
    const values = format === 'string' ? score.stringData!.values : score.byteData!.values;
    if (values.length !== schema.length) {
      throw invalidArgument(
        `row ${row} has ${values.length} values but the schema has ${schema.length} columns (${schema.join(', ')})`,
      );
    }
    rows[row] = values;
  }
  const table =
    format === 'string'
      ? { format, rows: rows as readonly (readonly string[])[] }
      : { format, rows: rows as readonly (readonly Uint8Array[])[] };
  return { computeId, schema, precision, table };
}

/** Every value column (schema[1..]) as a typed column of `precision`; the id column is never parsed. */
function readColumns(schema: readonly string[], table: ScoreTable, precision: Precision): Column[] {
  const rowCount = table.rows.length;
  const type = precision === 'fp32' ? Float32Array : Float64Array;
  const columns = Array.from({ length: schema.length - 1 }, () => new type(rowCount));
  const where = (row: number, column: number) => `row ${row}, column \`${schema[column]}\``;
  if (table.format === 'string') {
    for (let row = 0; row < rowCount; row++) {
      const values = table.rows[row]!;
      for (let column = 1; column < values.length; column++) {
        const text = values[column]!;
        const value = parseDecimal(text);
        if (value === undefined) {
          const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
          throw invalidArgument(`${where(row, column)}: ${JSON.stringify(shown)} is not a number`);
        }
        columns[column - 1]![row] = value;
      }
    }
    return columns;
  }
  const size = valueBytes(precision);
  for (let row = 0; row < rowCount; row++) {
    const values = table.rows[row]!;
    for (let column = 1; column < values.length; column++) {
      const bytes = values[column]!;
      if (bytes.length !== size) {
        throw invalidArgument(
          `${where(row, column)}: ${bytes.length} bytes, but ${precision} values are ${size} bytes (little-endian)`,
        );
      }
      columns[column - 1]![row] = size === 4 ? readFloat32(bytes) : readFloat64(bytes);
    }
  }
  return columns;
}

// Decoded values are views into the request (no copy per value), so a little-endian read goes
// through one scratch buffer instead of a DataView or Buffer per value.
const scratch = new ArrayBuffer(8);
const scratchBytes = new Uint8Array(scratch);
const scratchView = new DataView(scratch);

function readFloat32(bytes: Uint8Array): number {
  scratchBytes.set(bytes);
  return scratchView.getFloat32(0, true);
}

function readFloat64(bytes: Uint8Array): number {
  scratchBytes.set(bytes);
  return scratchView.getFloat64(0, true);
}

/** The schema column each expression variable reads; a variable with no column is a request error. */
function variableColumns(compute: ComputeExpression, schema: readonly string[]): Map<string, number> {
  const bound = new Map<string, number>();
  for (const variable of compute.expression.variables) {
    const column = schema.indexOf(variable, 1);
    if (column < 1) {
      const valueColumns = schema.length > 1 ? schema.slice(1).join(', ') : 'none';
      throw invalidArgument(
        `the expression of compute_id ${compute.computeId} (\`${compute.expression.source}\`) uses \`${variable}\`, which is not a schema column (value columns: ${valueColumns})`,
      );
    }
    bound.set(variable, column);
  }
  return bound;
}
