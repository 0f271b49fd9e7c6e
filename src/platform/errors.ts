/**
 * Errors are values with a code a caller can branch on and a message a user can act on. Each
 * transport maps codes to its own statuses in one place (grpc/status.ts, http/status.ts).
 */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'CANCELLED'
  | 'INTERNAL';

export interface LatticeErrorOptions {
  /** The input field (JSON path, setting name, request field) the error is about. */
  field?: string;
  cause?: unknown;
}

export class LatticeError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;

  constructor(code: ErrorCode, message: string, options: LatticeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LatticeError';
    this.code = code;
    this.field = options.field;
  }
}

export const invalidArgument = (message: string, field?: string): LatticeError =>
  new LatticeError('INVALID_ARGUMENT', message, { field });

export const notFound = (message: string, field?: string): LatticeError =>
  new LatticeError('NOT_FOUND', message, { field });

export const unavailable = (message: string, cause?: unknown): LatticeError =>
  new LatticeError('UNAVAILABLE', message, { cause });

export const deadlineExceeded = (message: string): LatticeError =>
  new LatticeError('DEADLINE_EXCEEDED', message);

export function isLatticeError(err: unknown, code?: ErrorCode): err is LatticeError {
  return err instanceof LatticeError && (code === undefined || err.code === code);
}

/** A readable message for any thrown value, including its cause chain. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.cause === undefined) return err.message;
  const cause = describeError(err.cause);
  // Adapters often fold the cause into their own message already; do not say it twice.
  return err.message.includes(cause) ? err.message : `${err.message}: ${cause}`;
}
