import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { type ErrorCode, isLatticeError } from '../errors.js';

/** The one place a Lattice error code becomes a gRPC status. */
export const grpcStatusOf: Record<ErrorCode, status> = {
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  ALREADY_EXISTS: status.ALREADY_EXISTS,
  FAILED_PRECONDITION: status.FAILED_PRECONDITION,
  ABORTED: status.ABORTED,
  UNAUTHENTICATED: status.UNAUTHENTICATED,
  PERMISSION_DENIED: status.PERMISSION_DENIED,
  RESOURCE_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: status.UNAVAILABLE,
  DEADLINE_EXCEEDED: status.DEADLINE_EXCEEDED,
  CANCELLED: status.CANCELLED,
  INTERNAL: status.INTERNAL,
};

/**
 * Longest status message sent. Messages quote the client's input, which may be megabytes (a 1 MB
 * model id): echoed whole it would exceed clients' default metadata limits (8 KiB in grpc-js and
 * grpc-core) and surface as RESOURCE_EXHAUSTED instead of the real status.
 */
export const MAX_STATUS_MESSAGE = 1024;

/** `text` cut to `max` characters, saying how much was left out. */
export function boundedText(text: string, max = MAX_STATUS_MESSAGE): string {
  if (text.length <= max) return text;
  const kept = max - 40;
  return `${text.slice(0, kept)}... (${text.length - kept} more characters)`;
}

/**
 * Turns anything a handler threw into the error a client sees. Lattice errors keep their message
 * (and the field, in the `field` trailer); anything else is INTERNAL with a generic message, since
 * its text may hold internals. `unexpected` is true for the latter, so the caller logs the stack.
 */
export function toServiceError(err: unknown): { error: Partial<ServiceError>; unexpected: boolean } {
  if (isLatticeError(err)) {
    const metadata = new Metadata();
    // Metadata values must be printable ASCII (grpc-js throws otherwise, and the call would hang):
    // a field path may quote a client's map key.
    if (err.field) metadata.set('field', boundedText(err.field, 256).replace(/[^\x20-\x7e]/g, '?'));
    return {
      error: { code: grpcStatusOf[err.code], details: boundedText(err.message), metadata },
      unexpected: false,
    };
  }
  return { error: { code: status.INTERNAL, details: 'internal error' }, unexpected: true };
}
