/**
 * Time spent inside chosen async methods of live objects (the SQL client, the vector DB, the
 * handler), summed per method: where a batch's time goes. Calls of different partitions overlap,
 * so a sum may exceed the wall time; time waiting for the single PGlite connection counts as time
 * inside the call.
 */
export interface StageTotal {
  calls: number;
  ms: number;
}

export class StageClock {
  readonly totals = new Map<string, StageTotal>();

  /** Wraps `target[method]` (an own property shadowing the prototype's) to add its time to `name`. */
  wrap<T extends object>(target: T, method: keyof T & string, name: string): void {
    const original = target[method] as unknown as (...args: unknown[]) => unknown;
    if (typeof original !== 'function') throw new TypeError(`${method} is not a method`);
    const total = this.#total(name);
    Object.defineProperty(target, method, {
      configurable: true,
      writable: true,
      value: function timed(this: unknown, ...args: unknown[]) {
        const started = performance.now();
        const result = original.apply(this, args);
        if (result instanceof Promise) {
          return result.finally(() => {
            total.calls++;
            total.ms += performance.now() - started;
          });
        }
        total.calls++;
        total.ms += performance.now() - started;
        return result;
      },
    });
  }

  #total(name: string): StageTotal {
    let total = this.totals.get(name);
    if (total === undefined) {
      total = { calls: 0, ms: 0 };
      this.totals.set(name, total);
    }
    return total;
  }

  /** `{ name: { calls, s } }` for the result line. */
  summary(): Record<string, { calls: number; s: number }> {
    return Object.fromEntries(
      [...this.totals].map(([name, t]) => [name, { calls: t.calls, s: Number((t.ms / 1000).toFixed(3)) }]),
    );
  }
}
