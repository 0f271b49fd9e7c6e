import { type ErrorCode, isLatticeError } from '../errors.js';

/** The one place a Lattice error code becomes an HTTP status. */
export const httpStatusOf: Record<ErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  FAILED_PRECONDITION: 409,
  ABORTED: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

export interface HttpErrorBody {
  error: { code: string; message: string; field?: string };
}

/** The status and JSON body a client sees for anything a route threw. */
export function toHttpError(err: unknown): { status: number; body: HttpErrorBody; unexpected: boolean } {
  if (isLatticeError(err)) {
    const body: HttpErrorBody = { error: { code: err.code, message: err.message } };
    if (err.field) body.error.field = err.field;
    return { status: httpStatusOf[err.code], body, unexpected: false };
  }
  // Fastify's own errors (schema validation, body too large, bad JSON) carry a 4xx statusCode.
  const e = err as { statusCode?: unknown; message?: unknown; validation?: Array<{ instancePath?: string }> };
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const body: HttpErrorBody = {
      error: {
        code: e.statusCode === 400 ? 'INVALID_ARGUMENT' : `HTTP_${e.statusCode}`,
        message: String(e.message),
      },
    };
    const field = e.validation?.[0]?.instancePath;
    if (field) body.error.field = field.replace(/^\//, '').replaceAll('/', '.');
    return { status: e.statusCode, body, unexpected: false };
  }
  return { status: 500, body: { error: { code: 'INTERNAL', message: 'internal error' } }, unexpected: true };
}
