/** A counting semaphore: bounds how many handlers run at once. Waiters are served in arrival order. */
export class Slots {
  #free: number;
  readonly #waiters: Array<() => void> = [];

  constructor(size: number) {
    this.#free = size;
  }

  acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#free++;
  }
}
