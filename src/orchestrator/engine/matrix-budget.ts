import { LatticeError } from '../../platform/errors.js';

/**
 * Bytes of request matrices alive at once in one orchestrator. Each request is bounded on its own
 * (max_matrix_bytes), but a thousand concurrent requests at that bound would still exhaust the heap:
 * past this budget a new request is refused with RESOURCE_EXHAUSTED, a signal to retry with backoff
 * or elsewhere. A request is always admitted when nothing else is in flight, so any request within
 * the per-request limits can be served.
 */
export class MatrixBudget {
  private used = 0;

  constructor(readonly maxBytes: number) {}

  get inFlightBytes(): number {
    return this.used;
  }

  /** Reserves `bytes`; the returned function gives them back (call it exactly once). */
  acquire(bytes: number): () => void {
    if (this.used > 0 && this.used + bytes > this.maxBytes) {
      throw new LatticeError(
        'RESOURCE_EXHAUSTED',
        `orchestrator busy: ${this.used} bytes of request matrices in flight, ${bytes} more would pass the budget of ${this.maxBytes}; retry with backoff`,
      );
    }
    this.used += bytes;
    return () => {
      this.used -= bytes;
    };
  }
}
