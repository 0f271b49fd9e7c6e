import { type ServiceError, status } from '@grpc/grpc-js';
import { BrokenCircuitError } from 'cockatiel';
import { describeError, type ErrorCode, LatticeError } from '../../platform/errors.js';
import type { CallTarget, ExternalService } from './call-target.js';

/** Failure kinds, as the errors metric labels them. */
export type FailureKind = 'deadline' | 'unavailable' | 'circuit_open' | 'cancelled' | 'server_error';

const serviceNames: Record<ExternalService, string> = {
  feature_store: 'feature store',
  model_server: 'model server',
  numerix: 'numerix',
  vss: 'vss',
};

const grpcToLattice: Partial<Record<status, ErrorCode>> = {
  [status.CANCELLED]: 'UNAVAILABLE', // cancelled by the server or a proxy; our own cancellation is mapped first
  [status.INVALID_ARGUMENT]: 'INVALID_ARGUMENT',
  [status.OUT_OF_RANGE]: 'INVALID_ARGUMENT',
  [status.NOT_FOUND]: 'NOT_FOUND',
  [status.ALREADY_EXISTS]: 'ALREADY_EXISTS',
  [status.FAILED_PRECONDITION]: 'FAILED_PRECONDITION',
  [status.UNIMPLEMENTED]: 'FAILED_PRECONDITION', // the target does not serve this API: a configuration error
  [status.ABORTED]: 'ABORTED',
  [status.UNAUTHENTICATED]: 'UNAUTHENTICATED',
  [status.PERMISSION_DENIED]: 'PERMISSION_DENIED',
  [status.RESOURCE_EXHAUSTED]: 'RESOURCE_EXHAUSTED',
  [status.UNAVAILABLE]: 'UNAVAILABLE',
  [status.DEADLINE_EXCEEDED]: 'DEADLINE_EXCEEDED',
};

export function isServiceError(err: unknown): err is ServiceError {
  if (!(err instanceof Error)) return false;
  const candidate = err as Partial<ServiceError>;
  return typeof candidate.code === 'number' && typeof candidate.details === 'string';
}

/** UNAVAILABLE raised without calling because the endpoint's circuit is open. */
export class CircuitOpen extends LatticeError {
  constructor(
    readonly target: string,
    detail: string,
  ) {
    super('UNAVAILABLE', `circuit open for ${target} (${detail})`);
  }
}

/** Thrown by the retry loop when the caller's signal aborted before an attempt. */
export class CallerCancelled extends Error {
  constructor(readonly reason: unknown) {
    super('cancelled by the caller');
  }
}

/** Thrown by the retry loop when no time is left for an attempt. */
export class NoBudget extends Error {
  constructor(readonly deadline: number) {
    super('deadline passed before the call');
  }
}

/** Maps whatever a call threw to a LatticeError whose message names the endpoint. */
export function toLatticeError(
  err: unknown,
  call: CallTarget,
  signal: AbortSignal | undefined,
): LatticeError {
  const where = `${serviceNames[call.service]} ${call.target}`;
  if (err instanceof BrokenCircuitError) {
    return new CircuitOpen(call.target, `${serviceNames[call.service]} ${call.method} not sent`);
  }
  if (err instanceof CallerCancelled || (isServiceError(err) && signal?.aborted)) {
    const reason = signal?.reason === undefined ? '' : `: ${describeError(signal.reason)}`;
    return new LatticeError('CANCELLED', `${where}: ${call.method} cancelled by the caller${reason}`, {
      cause: err,
    });
  }
  if (err instanceof NoBudget) {
    return new LatticeError(
      'DEADLINE_EXCEEDED',
      `${where}: ${call.method} not sent, the deadline had passed`,
    );
  }
  if (isServiceError(err)) {
    const name = status[err.code] ?? String(err.code);
    if (err.code === status.DEADLINE_EXCEEDED) {
      return new LatticeError('DEADLINE_EXCEEDED', `${where}: ${call.method} exceeded its deadline`, {
        cause: err,
      });
    }
    const code = grpcToLattice[err.code as status] ?? 'INTERNAL';
    return new LatticeError(code, `${where}: ${call.method} failed with ${name}: ${err.details}`);
  }
  if (err instanceof LatticeError) {
    return err.message.includes(call.target)
      ? err
      : new LatticeError(err.code, `${where}: ${err.message}`, { field: err.field, cause: err.cause });
  }
  return new LatticeError('INTERNAL', `${where}: ${call.method} failed: ${describeError(err)}`, {
    cause: err,
  });
}

export function failureKind(error: LatticeError): FailureKind {
  if (error instanceof CircuitOpen) return 'circuit_open';
  switch (error.code) {
    case 'DEADLINE_EXCEEDED':
      return 'deadline';
    case 'UNAVAILABLE':
      return 'unavailable';
    case 'CANCELLED':
      return 'cancelled';
    default:
      return 'server_error';
  }
}
