/**
 * Qdrant client failures as LatticeErrors. The REST client throws an error carrying the HTTP status
 * and body (`{ status: { error } }`) for answers other than 2xx, its own timeout error when the
 * request outlives `timeout`, and fetch's TypeError when no connection could be made.
 */
import {
  QdrantClientResourceExhaustedError,
  QdrantClientTimeoutError,
  QdrantClientUnexpectedResponseError,
} from '@qdrant/js-client-rest';
import { type ErrorCode, LatticeError } from '../../errors.js';

interface HttpFailure {
  status: number;
  data?: unknown;
  statusText?: string;
}

function httpFailure(err: unknown): HttpFailure | undefined {
  if (!(err instanceof Error)) return undefined;
  const status = (err as Partial<HttpFailure>).status;
  return typeof status === 'number' ? (err as unknown as HttpFailure) : undefined;
}

/** Qdrant's error text from a failure body, else the HTTP reason. */
function qdrantMessage(failure: HttpFailure): string {
  const data = failure.data as { status?: { error?: unknown } } | string | undefined;
  if (typeof data === 'object' && data !== null && typeof data.status?.error === 'string') {
    return data.status.error;
  }
  if (typeof data === 'string' && data.trim() !== '') return data.trim().slice(0, 500);
  return failure.statusText || `HTTP ${failure.status}`;
}

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  408: 'UNAVAILABLE',
  409: 'ALREADY_EXISTS',
  422: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'UNAVAILABLE',
};

/** The HTTP status of a failed Qdrant call, if the server answered at all. */
export function statusOf(err: unknown): number | undefined {
  return httpFailure(err)?.status;
}

export function messageOf(err: unknown): string {
  const failure = httpFailure(err);
  return failure ? qdrantMessage(failure) : err instanceof Error ? err.message : String(err);
}

function causeText(err: unknown): string {
  const parts: string[] = [];
  let at: unknown = err;
  while (at instanceof Error && parts.length < 4) {
    const code = (at as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? `${at.message} (${code})` : at.message);
    at = at.cause;
  }
  return parts.join(': ') || String(err);
}

/** A LatticeError for any failure of a call to the Qdrant at `url`. */
export function toLatticeError(err: unknown, url: string, timeoutMs: number): LatticeError {
  if (err instanceof LatticeError) return err;
  const failure = httpFailure(err);
  if (failure) {
    const code = CODE_BY_STATUS[failure.status] ?? (failure.status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
    return new LatticeError(code, `Qdrant at ${url} answered ${failure.status}: ${qdrantMessage(failure)}`, {
      cause: err,
    });
  }
  const name = err instanceof Error ? err.name : '';
  if (err instanceof QdrantClientTimeoutError || name === 'AbortError' || name === 'TimeoutError') {
    return new LatticeError('UNAVAILABLE', `Qdrant at ${url} did not answer within ${timeoutMs} ms`, {
      cause: err,
    });
  }
  if (err instanceof QdrantClientResourceExhaustedError) {
    return new LatticeError('RESOURCE_EXHAUSTED', `Qdrant at ${url} is rate limiting: ${causeText(err)}`, {
      cause: err,
    });
  }
  if (err instanceof QdrantClientUnexpectedResponseError) {
    return new LatticeError('INTERNAL', `Qdrant at ${url} answered unexpectedly: ${causeText(err)}`, {
      cause: err,
    });
  }
  return new LatticeError('UNAVAILABLE', `Qdrant at ${url} cannot be reached: ${causeText(err)}`, {
    cause: err,
  });
}
