import type { Client, Metadata, MethodDefinition, ServiceError } from '@grpc/grpc-js';
import { describeError, LatticeError } from '../../platform/errors.js';
import { type LocalCall, LocalChannel } from '../../platform/grpc/local-channel.js';

/** grpc-js moves our bytes as they are: serialising and parsing happen in unaryCall, outside its call. */
export const passThrough = (bytes: Buffer): Buffer => bytes;

/**
 * One unary call of an already serialised request; aborting `signal` cancels it (RST_STREAM: the
 * server's handler sees `cancelled`). The response is parsed here, and what grpc-js keeps of the call
 * (its callback) reaches only a Completion that forgets its promise, signal and call once settled:
 * Node 20 keeps each finished client HTTP/2 stream, and the call objects hung on it, alive through
 * young-generation collections until the next full one, so every message, promise or request context
 * still reachable from there would be copied by each scavenge meanwhile (5–9 ms pauses in
 * bench/predict). A LocalChannel (a server of this process) takes the same bytes without the network.
 */
export function unaryCall<Req, Res>(
  client: Client | LocalChannel,
  method: MethodDefinition<Req, Res>,
  body: Buffer,
  metadata: Metadata,
  deadline: number,
  signal: AbortSignal,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const completion = new Completion(method.path, method.responseDeserialize, signal, resolve, reject);
    if (client instanceof LocalChannel) {
      completion.call = client.call(method.path, body, metadata, deadline, callbackOf(completion));
      signal.addEventListener('abort', completion, { once: true });
      return;
    }
    // grpc-js captures the caller's stack (`new Error()`) on every call, for the messages of failed
    // ones; ours name the endpoint instead, and the capture was the costliest step of a call.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      completion.call = client.makeUnaryRequest(
        method.path,
        passThrough,
        passThrough,
        body,
        metadata,
        { deadline },
        callbackOf(completion),
      );
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    signal.addEventListener('abort', completion, { once: true });
  });
}

/** A closure over nothing but `completion` (a closure made in unaryCall would hold its whole scope). */
function callbackOf<Res>(completion: Completion<Res>) {
  return (err: ServiceError | null, bytes?: Buffer) => completion.settle(err, bytes);
}

class Completion<Res> {
  call: LocalCall | undefined = undefined;

  constructor(
    private readonly path: string,
    private parse: ((bytes: Buffer) => Res) | undefined,
    private signal: AbortSignal | undefined,
    private resolve: ((response: Res) => void) | undefined,
    private reject: ((reason: unknown) => void) | undefined,
  ) {}

  /** The caller's signal aborted (EventListenerObject: no closure per call). */
  handleEvent(): void {
    this.call?.cancel();
  }

  settle(err: ServiceError | null, bytes: Buffer | undefined): void {
    const { parse, resolve, reject } = this;
    if (!parse || !resolve || !reject) return;
    this.signal?.removeEventListener('abort', this);
    this.parse = this.signal = this.resolve = this.reject = this.call = undefined;
    if (err) reject(err);
    else if (bytes === undefined) reject(new LatticeError('INTERNAL', `${this.path}: empty response`));
    else {
      let response: Res;
      try {
        response = parse(bytes);
      } catch (cause) {
        const why = `${this.path}: the response cannot be parsed: ${describeError(cause)}`;
        reject(new LatticeError('INTERNAL', why, { cause }));
        return;
      }
      resolve(response);
    }
  }
}
