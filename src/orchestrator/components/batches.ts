import { nextTurn, sliceOver, stopIfOver } from '../../platform/scheduling/index.js';

/**
 * Batches of one component that one request keeps in flight at once (a bulkhead per request and
 * component). The rest wait their turn, each call's own timeout starting when it is sent: a request
 * with 100,000 targets sends 8 model batches at a time instead of 391, so its batches do not queue
 * behind each other on the server until they all time out, and other callers keep their share.
 */
export const MAX_BATCHES_IN_FLIGHT = 8;

/**
 * Runs `batch(0 … count−1)` in order, at most `limit` at a time. `batch` must not reject: it records
 * its own failure. Before each start it stops (rejecting with the reason) once `signal` has aborted
 * or `deadline` has passed, and gives the event loop a turn when the time slice is over, so batches
 * that complete without I/O (in-process fetchers, fast answers) cannot hold the loop either.
 */
export async function runBatches(
  count: number,
  limit: number,
  signal: AbortSignal,
  deadline: number,
  batch: (index: number) => Promise<void>,
): Promise<void> {
  if (count === 1) {
    stopIfOver(signal, deadline);
    return batch(0);
  }
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      // Batches beyond the first wave check the time slice (a clock read; small requests never do).
      if (index >= limit && sliceOver()) await nextTurn(signal, deadline);
      else stopIfOver(signal, deadline);
      await batch(index);
    }
  };
  const workers: Promise<void>[] = [];
  for (let w = 0; w < Math.min(limit, count); w++) workers.push(worker());
  await Promise.all(workers);
}
