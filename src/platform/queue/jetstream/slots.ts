/**
 * A counting semaphore: bounds how many handlers run at once. Waiters are served in arrival order.
 * Closing it turns every waiter away (`false`), so a stopping consumer never waits for a slot; a
 * closed semaphore, unlike a race against a stop promise, leaves nothing behind per acquire.
 */
export class Slots {
  #free: number;
  #closed = false;
  readonly #waiters: Array<(granted: boolean) => void> = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Takes a free slot at once if there is one (open, none waiting ahead); else false. */
  tryAcquire(): boolean {
    if (this.#closed || this.#free === 0) return false;
    this.#free--;
    return true;
  }

  /** Resolves true with a slot, or false once the semaphore is closed. */
  acquire(): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next(true);
    else this.#free++;
  }

  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter(false);
  }
}
