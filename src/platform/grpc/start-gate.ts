/**
 * The start-up gate of a gRPC server: bound before the process is ready, a server answers every call
 * UNAVAILABLE at once ("… is starting, try again shortly") until the composition root opens the gate,
 * rather than letting calls wait on a process still loading its data (a Search during a vss start-up
 * waited 5–10 s for an answer). Health and reflection pass: health says NOT_SERVING meanwhile.
 */
import {
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from '@grpc/grpc-js';

const alwaysOpen = ['/grpc.health.v1.Health/', '/grpc.reflection.'];

export class StartGate {
  #open = false;

  constructor(private readonly serverName: string) {}

  get isOpen(): boolean {
    return this.#open;
  }

  open(): void {
    this.#open = true;
  }

  readonly interceptor: ServerInterceptor = (method, call) => {
    if (this.#open || alwaysOpen.some((prefix) => method.path.startsWith(prefix)))
      return new ServerInterceptingCall(call);
    return new ServerInterceptingCall(
      call,
      new ResponderBuilder()
        .withStart((next) => {
          next(
            new ServerListenerBuilder()
              .withOnReceiveMetadata((metadata, nextMetadata) => {
                if (this.#open) {
                  nextMetadata(metadata);
                  return;
                }
                call.sendStatus({
                  code: status.UNAVAILABLE,
                  details: `${this.serverName} is starting and not serving yet; try again shortly`,
                });
              })
              .build(),
          );
        })
        .build(),
    );
  };
}
