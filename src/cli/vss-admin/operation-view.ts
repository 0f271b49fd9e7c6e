/**
 * What the CLI reads from an operation body of the admin API (`GET /operations/{id}` and the
 * accepted POSTs): vss.md names the fields in snake_case. The reading is lenient on purpose: an
 * operation may come bare or under `operation`, and a job's row counts at the top level or under
 * `job` / `result`, so a display detail never turns a working call into a failure.
 */

export interface OperationView {
  operationId: string;
  kind: string | undefined;
  /** PENDING, RUNNING, SUCCEEDED, FAILED; undefined when the body does not say (a bare accept). */
  status: string | undefined;
  step: string | undefined;
  /** 0..1 */
  progress: number | undefined;
  rowsPublished: number | undefined;
  /** Rows the job could not read (counted, not fatal). */
  badRowCount: number | undefined;
  lastError: string | undefined;
}

type Fields = Record<string, unknown>;

const isObject = (value: unknown): value is Fields =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The operation in `body`, or undefined when it names none (no `operation_id`). */
export function readOperation(body: unknown): OperationView | undefined {
  if (!isObject(body)) return undefined;
  const fields = isObject(body.operation) ? body.operation : body;
  const operationId = fields.operation_id;
  if (typeof operationId !== 'string' && typeof operationId !== 'number') return undefined;
  return {
    operationId: String(operationId),
    kind: text(fields.kind),
    status: text(fields.status),
    step: text(fields.step),
    progress: fraction(fields.progress),
    rowsPublished: jobCount(fields, 'rows_published'),
    badRowCount: jobCount(fields, 'bad_row_count'),
    lastError: text(fields.last_error),
  };
}

/** An operation known only by its id (an answer that names one without its state). */
export function bareOperation(operationId: string): OperationView {
  return {
    operationId,
    kind: undefined,
    status: undefined,
    step: undefined,
    progress: undefined,
    rowsPublished: undefined,
    badRowCount: undefined,
    lastError: undefined,
  };
}

export const isTerminal = (operation: OperationView): boolean =>
  operation.status === 'SUCCEEDED' || operation.status === 'FAILED';

/** `RESET_MODEL 7f3c… RUNNING at INGESTING (42%)` */
export function describeOperation(operation: OperationView): string {
  const parts = [`operation ${operation.operationId}`];
  if (operation.kind !== undefined) parts.push(`(${operation.kind})`);
  if (operation.status !== undefined) parts.push(operation.status);
  if (operation.step !== undefined && operation.status !== 'SUCCEEDED') parts.push(`at ${operation.step}`);
  if (operation.progress !== undefined && operation.status === 'RUNNING') {
    parts.push(`(${Math.floor(operation.progress * 100)}%)`);
  }
  return parts.join(' ');
}

/** A job counter: in `result.job` as the operations engine writes it, or at the top level or `job`. */
function jobCount(fields: Fields, name: string): number | undefined {
  const result = isObject(fields.result) ? fields.result : {};
  for (const holder of [result.job, fields.job, fields]) {
    const value = isObject(holder) ? holder[name] : undefined;
    if (typeof value === 'number') return value;
  }
  return undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function fraction(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  return Math.min(1, Math.max(0, value));
}
