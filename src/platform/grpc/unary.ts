import { setMaxListeners } from 'node:events';
import type { handleUnaryCall, Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { LatticeError } from '../errors.js';
import { giveWayToLight, lightCallRunning } from '../scheduling/index.js';
import { Admission, type Classify } from './admission.js';
import { toServiceError } from './status.js';
import { DeferredRequest, UndecodableRequest } from './undecodable-request.js';

/** What a handler knows about its call besides the request. */
export interface CallContext {
  /** Aborted when the client cancels or the call's deadline passes; pass it to every downstream call. */
  signal: AbortSignal;
  /** The call's deadline as epoch milliseconds: the client's, or the server's default when it set none. */
  deadline: number;
  metadata: Metadata;
  /** gRPC method path, e.g. `/orchestrator.v1.Predict/InferPointWise`. */
  method: string;
  /**
   * Trailing metadata to answer with, set by the handler before it settles (kept on an error too,
   * beside the `field` trailer); undefined sends none.
   */
  trailers?: Metadata;
}

export type UnaryHandler<Req, Res> = (request: Req, context: CallContext) => Promise<Res>;

/**
 * Handlers for every method of a service definition, typed from it: a handler gets what the method's
 * `requestDeserialize` makes and returns what its `responseSerialize` takes (a server-side definition
 * may answer with its own type, written straight to the wire).
 */
export type UnaryHandlers<D> = {
  [K in keyof D]: D[K] extends {
    requestDeserialize: (bytes: Buffer) => infer Req;
    responseSerialize: (value: infer Res) => Buffer;
  }
    ? UnaryHandler<Req, Res>
    : never;
};

function deadlineMs(call: ServerUnaryCall<unknown, unknown>): number {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/** Limits every call of one server shares. */
export interface CallLimits {
  /** Deadline given to calls whose client set none, in milliseconds. */
  defaultDeadlineMs: number;
  /** Calls whose handlers are still running; past `maxInFlight` new calls are refused. */
  inFlight: InFlightGate;
  /** Per-class concurrency and queues (admission.ts). */
  admission: Admission;
}

/** Requests decoded in slices (large by definition) are heavy; everything else light. */
export const classifyBySize: Classify = (_method, request) =>
  request instanceof DeferredRequest ? 'heavy' : 'light';

/**
 * Counts handlers still running on one server. A call is counted until its handler settles, not
 * until it is answered: work that outlives its answer still holds the CPU and memory this protects.
 */
export class InFlightGate {
  active = 0;
  constructor(readonly max: number) {}
}

export const defaultCallLimits = (): CallLimits => ({
  defaultDeadlineMs: 30_000,
  inFlight: new InFlightGate(1024),
  admission: new Admission('server'),
});

/**
 * Adapts a promise-returning handler to grpc-js: gives it an AbortSignal tied to cancellation and the
 * deadline (the server's default when the client set none), and maps whatever it throws to a status
 * in one place. The client is answered as soon as the signal aborts, whether or not the handler has
 * noticed. Past the server's in-flight limit a call is refused with RESOURCE_EXHAUSTED; within it, the
 * call is admitted by its class's gate (`classify`, admission.ts): run now, queued, or refused
 * RESOURCE_EXHAUSTED. Unexpected
 * errors go to `onUnexpected` (logged with their stack) and reach the client as INTERNAL; the process
 * keeps serving.
 */
export function unary<Req, Res>(
  method: string,
  handler: UnaryHandler<Req, Res>,
  onUnexpected: (err: unknown, method: string) => void,
  limits: CallLimits = defaultCallLimits(),
  classify: Classify = classifyBySize,
): handleUnaryCall<Req, Res> {
  const { inFlight, admission } = limits;
  return (call, callback) => {
    if ((call.request as unknown) instanceof UndecodableRequest) {
      callback(toServiceError((call.request as unknown as UndecodableRequest).error).error);
      return;
    }
    if (inFlight.active >= inFlight.max) {
      callback(
        toServiceError(
          new LatticeError(
            'RESOURCE_EXHAUSTED',
            `${method}: server busy, ${inFlight.active} calls in flight (limit ${inFlight.max}); retry with backoff`,
          ),
        ).error,
      );
      return;
    }
    const request = call.request as unknown;
    const admissionClass = classify(method, request);
    const gate = admission.gate(admissionClass);
    const refusal = gate.refusalIfFull(method);
    if (refusal) {
      callback(toServiceError(refusal).error);
      return;
    }
    const controller = new AbortController();
    // A handler passes the signal to each of its downstream calls (a Search of many queries makes one
    // per query), each adding a listener: no leak warning past ten.
    setMaxListeners(0, controller.signal);
    const clientDeadline = deadlineMs(call);
    const deadline = Number.isFinite(clientDeadline) ? clientDeadline : Date.now() + limits.defaultDeadlineMs;
    const context: CallContext = {
      signal: controller.signal,
      deadline,
      metadata: call.metadata,
      method,
      trailers: undefined,
    };
    let answered = false;
    const answer = (err: unknown, response?: Res) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      call.off('cancelled', onCancelled);
      controller.signal.removeEventListener('abort', onAbort);
      const trailers = context.trailers;
      if (err === null) {
        callback(null, response, trailers);
        return;
      }
      const { error, unexpected } = toServiceError(err);
      if (unexpected) onUnexpected(err, method);
      if (trailers !== undefined) {
        if (error.metadata === undefined) error.metadata = trailers;
        else error.metadata.merge(trailers);
      }
      callback(error);
    };
    const onAbort = () => answer(controller.signal.reason);
    const timer = setTimeout(
      () => controller.abort(new LatticeError('DEADLINE_EXCEEDED', `${method}: deadline exceeded`)),
      Math.max(0, deadline - Date.now()),
    );
    const onCancelled = () =>
      controller.abort(new LatticeError('CANCELLED', `${method}: cancelled by the client`));
    call.once('cancelled', onCancelled);
    controller.signal.addEventListener('abort', onAbort);
    const run = (release: () => void) => {
      // Admitted from the queue after the call ended: the slot goes to the next one.
      if (controller.signal.aborted) {
        release();
        return;
      }
      inFlight.active++;
      // Heavy calls' loops give way to light calls of the whole process (time-slice.ts).
      const light = admissionClass === 'light' ? lightCallRunning() : undefined;
      if (!light) giveWayToLight(controller.signal);
      let result: Promise<Res>;
      if (request instanceof DeferredRequest) {
        // A large request is decoded in slices first, under the call's signal and deadline.
        result = request.decode(context.signal, deadline).then((decoded) => handler(decoded as Req, context));
      } else {
        try {
          result = handler(call.request, context);
        } catch (err) {
          result = Promise.reject(err);
        }
      }
      result.then(
        (response) => {
          inFlight.active--;
          light?.();
          release();
          answer(null, response);
        },
        (err: unknown) => {
          inFlight.active--;
          light?.();
          release();
          answer(controller.signal.aborted ? controller.signal.reason : err);
        },
      );
    };
    const admitted = gate.admit(method, controller.signal);
    if (typeof admitted === 'function') run(admitted);
    else admitted.then(run, (err: unknown) => answer(err));
  };
}
