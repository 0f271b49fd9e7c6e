/**
 * Maps nats.js errors to LatticeErrors, so callers of the queue see the same codes whatever the
 * adapter: no answer in time → DEADLINE_EXCEEDED, no connection / no JetStream → UNAVAILABLE.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import {
  AuthorizationError,
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  InvalidArgumentError,
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  TimeoutError,
} from '@nats-io/transport-node';
import { describeError, LatticeError } from '../../errors.js';

export function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

export function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/** No stream listens on the subject (nats.js reports this as "JetStream not enabled"). */
export function isNoResponders(err: unknown): boolean {
  if (err instanceof NoRespondersError) return true;
  if (err instanceof RequestError && err.isNoResponders()) return true;
  return err instanceof Error && (err.name === 'JetStreamNotEnabled' || isNoResponders(err.cause));
}

/** `what` names the operation ("publish to topic x"); the result keeps `err` as its cause. */
export function toQueueError(err: unknown, what: string): LatticeError {
  if (err instanceof LatticeError) return err;
  const detail = describeError(err);
  if (err instanceof TimeoutError) {
    return new LatticeError('DEADLINE_EXCEEDED', `${what}: NATS did not answer in time`, { cause: err });
  }
  if (isNoResponders(err)) {
    return new LatticeError('UNAVAILABLE', `${what}: JetStream did not respond (${detail})`, { cause: err });
  }
  if (
    err instanceof ConnectionError ||
    err instanceof ClosedConnectionError ||
    err instanceof DrainingConnectionError ||
    (err instanceof Error && err.name === 'JetStreamNotEnabled')
  ) {
    return new LatticeError('UNAVAILABLE', `${what}: ${detail}`, { cause: err });
  }
  if (err instanceof AuthorizationError || err instanceof PermissionViolationError) {
    return new LatticeError('PERMISSION_DENIED', `${what}: ${detail}`, { cause: err });
  }
  if (err instanceof InvalidArgumentError) {
    return new LatticeError('INVALID_ARGUMENT', `${what}: ${detail}`, { cause: err });
  }
  if (err instanceof JetStreamApiError) {
    const code = err.status === 400 ? 'INVALID_ARGUMENT' : err.status === 503 ? 'UNAVAILABLE' : 'INTERNAL';
    return new LatticeError(code, `${what}: JetStream error ${err.code}: ${detail}`, { cause: err });
  }
  return new LatticeError('INTERNAL', `${what}: ${detail}`, { cause: err });
}
