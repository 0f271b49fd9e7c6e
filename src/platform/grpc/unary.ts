import { setMaxListeners } from 'node:events';
import type { handleUnaryCall, Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { LatticeError } from '../errors.js';
import { toServiceError } from './status.js';
import { UndecodableRequest } from './undecodable-request.js';

/** What a handler knows about its call besides the request. */
export interface CallContext {
  /** Aborted when the client cancels or the call's deadline passes; pass it to every downstream call. */
  signal: AbortSignal;
  /** The call's deadline as epoch milliseconds; Infinity when the client set none. */
  deadline: number;
  metadata: Metadata;
  /** gRPC method path, e.g. `/orchestrator.v1.Predict/InferPointWise`. */
  method: string;
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

/**
 * Adapts a promise-returning handler to grpc-js: gives it an AbortSignal tied to cancellation and the
 * deadline, and maps whatever it throws to a status in one place. Unexpected errors go to `onUnexpected`
 * (logged with their stack) and reach the client as INTERNAL; the process keeps serving.
 */
export function unary<Req, Res>(
  method: string,
  handler: UnaryHandler<Req, Res>,
  onUnexpected: (err: unknown, method: string) => void,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    if ((call.request as unknown) instanceof UndecodableRequest) {
      callback(toServiceError((call.request as unknown as UndecodableRequest).error).error);
      return;
    }
    const controller = new AbortController();
    // A handler passes the signal to each of its downstream calls (a Search of many queries makes one
    // per query), each adding a listener: no leak warning past ten.
    setMaxListeners(0, controller.signal);
    const deadline = deadlineMs(call);
    let timer: NodeJS.Timeout | undefined;
    if (Number.isFinite(deadline)) {
      timer = setTimeout(
        () => controller.abort(new LatticeError('DEADLINE_EXCEEDED', `${method}: deadline exceeded`)),
        Math.max(0, deadline - Date.now()),
      );
    }
    const onCancelled = () =>
      controller.abort(new LatticeError('CANCELLED', `${method}: cancelled by the client`));
    call.once('cancelled', onCancelled);
    const context: CallContext = { signal: controller.signal, deadline, metadata: call.metadata, method };
    let result: Promise<Res>;
    try {
      result = handler(call.request, context);
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then(
      (response) => {
        clearTimeout(timer);
        call.off('cancelled', onCancelled);
        callback(null, response);
      },
      (err: unknown) => {
        clearTimeout(timer);
        call.off('cancelled', onCancelled);
        const reason = controller.signal.aborted ? controller.signal.reason : err;
        const { error, unexpected } = toServiceError(reason);
        if (unexpected) onUnexpected(reason, method);
        callback(error);
      },
    );
  };
}
