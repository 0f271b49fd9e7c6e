/**
 * The start-up gate of a gRPC server: bound before the process is ready, a server answers every call
 * UNAVAILABLE at once ("… is starting, try again shortly") until the composition root opens the gate,
 * rather than letting calls wait on a process still loading its data (a Search during a vss start-up
 * waited 5–10 s for an answer). Health and reflection pass: health says NOT_SERVING meanwhile.
 */
import { type ServerInterceptor, status } from '@grpc/grpc-js';
import { isOpenMethod, refusingInterceptor } from './interceptors.js';

export class StartGate {
  #open = false;

  constructor(private readonly serverName: string) {}

  get isOpen(): boolean {
    return this.#open;
  }

  open(): void {
    this.#open = true;
  }

  readonly interceptor: ServerInterceptor = refusingInterceptor(
    () =>
      this.#open
        ? undefined
        : {
            code: status.UNAVAILABLE,
            details: `${this.serverName} is starting and not serving yet; try again shortly`,
          },
    (path) => this.#open || isOpenMethod(path),
  );
}
