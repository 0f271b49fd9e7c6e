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
 * Turns anything a handler threw into the error a client sees. Lattice errors keep their message
 * (and the field, in the `field` trailer); anything else is INTERNAL with a generic message, since
 * its text may hold internals. `unexpected` is true for the latter, so the caller logs the stack.
 */
export function toServiceError(err: unknown): { error: Partial<ServiceError>; unexpected: boolean } {
  if (isLatticeError(err)) {
    const metadata = new Metadata();
    if (err.field) metadata.set('field', err.field);
    return { error: { code: grpcStatusOf[err.code], details: err.message, metadata }, unexpected: false };
  }
  return { error: { code: status.INTERNAL, details: 'internal error' }, unexpected: true };
}
