/**
 * A gRPC server's unary methods called from its own process without the network: the in-process
 * transport (what grpc-java calls an in-process channel). `lattice up` runs the orchestrator beside
 * the feature store, model server and compute it calls; over loopback, each of a Predict's calls
 * crosses the one event loop four times (client write, server read, server write, client read), and
 * under load each crossing waits behind whatever else is ready, so a small Predict missed its
 * components' 200 ms deadlines while large Searches ran. Through a LocalChannel the same call is a
 * few microtasks: the request is serialised and parsed as on the wire (the handler sees exactly what
 * a remote client would send it), and it goes through the server's own call wrapper (admission
 * classes and queues, in-flight limit, deadline, cancellation, error-to-status mapping), so the
 * caller sees the same answers and the same status codes. What it skips is the transport and the
 * interceptors: TLS (nothing leaves the process), the start gate (checked here instead), and the
 * server's `grpc_server_*` metrics (the caller's own call metrics count these calls). A server with
 * caller-token auth offers no LocalChannel, so a token check is never skipped.
 */
import { EventEmitter } from 'node:events';
import {
  type handleUnaryCall,
  Metadata,
  type MethodDefinition,
  type ServerUnaryCall,
  type ServiceError,
  status,
} from '@grpc/grpc-js';

/** One method as its server serves it: the wrapped handler and the server-side codecs. */
export interface LocalMethod {
  handle: handleUnaryCall<unknown, unknown>;
  definition: MethodDefinition<unknown, unknown>;
}

/** What the channel asks its server on each call: the method, or why it cannot take calls now. */
export interface LocalServer {
  method(path: string): LocalMethod | undefined;
  /** Undefined while serving; otherwise the UNAVAILABLE message (starting, stopping). */
  notServing(): string | undefined;
}

/** A started call; `cancel()` ends it CANCELLED, as a client cancelling its gRPC call does. */
export interface LocalCall {
  cancel(): void;
}

export type LocalCallback = (err: ServiceError | null, bytes?: Buffer) => void;

/** A client-side error as grpc-js makes one (`code`, `details`, `metadata`, message `CODE NAME: details`). */
function serviceError(code: status, details: string, metadata = new Metadata()): ServiceError {
  const error = new Error(`${code} ${status[code]}: ${details}`) as ServiceError;
  error.code = code;
  error.details = details;
  error.metadata = metadata;
  return error;
}

/** The server-side call object the unary wrapper reads: the request, deadline, metadata, cancellation. */
class LocalServerCall extends EventEmitter {
  constructor(
    readonly request: unknown,
    readonly metadata: Metadata,
    private readonly deadline: number,
  ) {
    super();
  }

  getDeadline(): number {
    return this.deadline;
  }
}

export class LocalChannel {
  constructor(
    /** The server's `host:port`, for messages. */
    readonly address: string,
    private readonly server: LocalServer,
  ) {}

  /**
   * Calls `path` with the serialised request `body`; `callback` gets the serialised response or a
   * ServiceError, always asynchronously (never before this returns), exactly once.
   */
  call(path: string, body: Buffer, metadata: Metadata, deadline: number, callback: LocalCallback): LocalCall {
    let settled = false;
    let serverCall: LocalServerCall | undefined;
    const finish = (err: ServiceError | null, bytes?: Buffer) => {
      if (settled) return;
      settled = true;
      callback(err, bytes);
    };
    queueMicrotask(() => {
      if (settled) return;
      const notServing = this.server.notServing();
      if (notServing !== undefined) {
        finish(serviceError(status.UNAVAILABLE, notServing));
        return;
      }
      const method = this.server.method(path);
      if (!method) {
        finish(serviceError(status.UNIMPLEMENTED, `${this.address} does not serve ${path}`));
        return;
      }
      const { definition } = method;
      serverCall = new LocalServerCall(definition.requestDeserialize(body), metadata.clone(), deadline);
      method.handle(serverCall as unknown as ServerUnaryCall<unknown, unknown>, (err, response) => {
        if (err) {
          const code = typeof err.code === 'number' ? err.code : status.UNKNOWN;
          const details = err.details ?? ('message' in err ? err.message : '');
          finish(serviceError(code, details, err.metadata ?? new Metadata()));
          return;
        }
        let bytes: Buffer;
        try {
          bytes = definition.responseSerialize(response);
        } catch {
          finish(serviceError(status.INTERNAL, `${path}: the response cannot be serialised`));
          return;
        }
        finish(null, bytes);
      });
    });
    return {
      cancel: () => {
        if (settled) return;
        // The handler's signal aborts (as on an RST_STREAM); the caller is answered at once.
        serverCall?.emit('cancelled');
        finish(serviceError(status.CANCELLED, 'Cancelled on client'));
      },
    };
  }
}
