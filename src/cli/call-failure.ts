/**
 * What a failed call of a CLI gRPC client (`lattice predict`, `lattice search`) tells the user: a
 * server that cannot be reached, a caller the server does not accept (with the flags that fix it),
 * or the server's own answer with its status. A LatticeError raised by the client itself (a request
 * it refused to send) passes through unchanged.
 */
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { describeError, type ErrorCode, LatticeError } from '../platform/errors.js';

const PASSED_ON: ReadonlySet<string> = new Set<ErrorCode>([
  'NOT_FOUND',
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'DEADLINE_EXCEEDED',
  'RESOURCE_EXHAUSTED',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
]);

/**
 * The error to report for `err`, thrown by a call of `what` ("predict", "search") to `server` at
 * `address`; `reach` says how to start it or point the command at it.
 */
export function callFailure(
  err: unknown,
  call: { what: string; server: string; address: string; reach: string },
): unknown {
  if (err instanceof LatticeError) return err;
  const grpc = err as Partial<ServiceError>;
  if (typeof grpc.code !== 'number') return err;
  const details = grpc.details ?? describeError(err);
  const name = grpcStatus[grpc.code] ?? String(grpc.code);
  if (grpc.code === grpcStatus.UNAVAILABLE) {
    return new LatticeError(
      'UNAVAILABLE',
      `${call.server} is not reachable at ${call.address} (${details}); ${call.reach}`,
    );
  }
  const hint =
    grpc.code === grpcStatus.UNAUTHENTICATED
      ? '; the server has caller tokens on: give --caller-id and --caller-token (or LATTICE_CALLER_ID and LATTICE_CALLER_TOKEN)'
      : '';
  const code = PASSED_ON.has(name) ? (name as ErrorCode) : 'INTERNAL';
  return new LatticeError(code, `${call.what} failed (${name}): ${details}${hint}`);
}
