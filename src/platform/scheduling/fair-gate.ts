/**
 * A limit on calls in flight to one downstream endpoint, shared by every request of the process and
 * fair between them. Without it, four requests of 100,000 targets keep 32 model batches queued on
 * the model server, and a two-target request's one batch waits behind all of them; with it, at most
 * `limit` calls are in flight, and a freed slot goes to the requests in turn (round robin over the
 * requests waiting, first in first out within one), so a small request waits for about one slot,
 * however many batches the large ones still have.
 *
 * Requests are told apart by a key object (the call's AbortSignal: one per request). A waiter whose
 * signal aborts leaves the queue at once, rejected with the signal's reason.
 */

interface Waiter {
  resolve: (release: () => void) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class FairGate {
  #active = 0;
  /** Waiting calls by request key; the Map's order is the round robin (a served key moves to the back). */
  readonly #queues = new Map<object, Waiter[]>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`FairGate limit must be ≥ 1, got ${limit}`);
  }

  /** Calls in flight now. */
  get active(): number {
    return this.#active;
  }

  /** Calls waiting for a slot. */
  get waiting(): number {
    let n = 0;
    for (const queue of this.#queues.values()) n += queue.length;
    return n;
  }

  /**
   * Resolves with a release function once the call may go (call it exactly once, when the call has
   * settled); rejects with the signal's reason if it aborts first.
   */
  acquire(key: object, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#active < this.limit && this.#queues.size === 0) {
      this.#active++;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.#remove(key, waiter);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      const queue = this.#queues.get(key);
      if (queue) queue.push(waiter);
      else this.#queues.set(key, [waiter]);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      this.#dispatch();
    };
  }

  #dispatch(): void {
    while (this.#active < this.limit) {
      const first = this.#queues.entries().next();
      if (first.done) return;
      const [key, queue] = first.value;
      const waiter = queue.shift()!;
      this.#queues.delete(key);
      if (queue.length > 0) this.#queues.set(key, queue);
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      this.#active++;
      waiter.resolve(this.#releaser());
    }
  }

  #remove(key: object, waiter: Waiter): void {
    const queue = this.#queues.get(key);
    if (!queue) return;
    const at = queue.indexOf(waiter);
    if (at >= 0) queue.splice(at, 1);
    if (queue.length === 0) this.#queues.delete(key);
  }
}

/** One gate per endpoint target, created on first use. */
export class FairGates {
  readonly #gates = new Map<string, FairGate>();
  constructor(readonly limit: number) {}

  for(target: string): FairGate {
    let gate = this.#gates.get(target);
    if (!gate) {
      gate = new FairGate(this.limit);
      this.#gates.set(target, gate);
    }
    return gate;
  }
}
