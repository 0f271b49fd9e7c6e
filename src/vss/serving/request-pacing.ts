/**
 * Cooperative scheduling of a request's long loops (the queries of a Search, the ids of a look-up),
 * so one large request neither holds the event loop for seconds nor keeps working after its caller
 * has gone. A vector DB answer that is already computed resolves as a microtask: a Search of 256
 * queries used to run all of them without the event loop ever turning, deaf to its own deadline timer
 * and to every other call.
 *
 * `pace()` between units of work: it throws once the call is cancelled or past its deadline (read
 * from the clock, since a busy loop runs the deadline timer late), and once the event loop's current
 * turn has been busy for SLICE_MS it gives the loop a turn first. The slice and the turns are the
 * process's (platform/scheduling/time-slice.ts), shared with every other service of the process: in
 * `lattice up` large Searches and the orchestrator's long loops wait for turns in one round robin,
 * and a small call's I/O is served between any two of them. A small request pays one clock read per
 * unit and never an extra turn.
 */
import type { CallContext } from '../../platform/grpc/index.js';
import { nextTurn, sliceOver, stopIfOver as stopIfRequestOver } from '../../platform/scheduling/index.js';

/** Throws the call's own reason when it was cancelled or its deadline has passed. */
export function stopIfOver(context: Pick<CallContext, 'signal' | 'deadline'>): void {
  stopIfRequestOver(context.signal, context.deadline);
}

/** Between units of a call's work: stop when the call is over, give the event loop a turn when the slice is. */
export async function pace(context: Pick<CallContext, 'signal' | 'deadline'>): Promise<void> {
  if (sliceOver()) await nextTurn(context.signal, context.deadline);
  else stopIfOver(context);
}

/**
 * `work(i)` for i in [0, count), at most `concurrency` at a time, paced between items; resolves to
 * the results in order. Stops starting items once the call is over (the first failure is thrown).
 */
export async function pacedMap<T>(
  count: number,
  concurrency: number,
  context: Pick<CallContext, 'signal' | 'deadline'>,
  work: (i: number) => Promise<T>,
): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < count) {
      const i = next++;
      await pace(context);
      results[i] = await work(i);
    }
  };
  const workers = Array.from({ length: Math.min(concurrency, count) }, () =>
    worker().catch((err: unknown) => {
      failed = true;
      throw err;
    }),
  );
  await Promise.all(workers);
  return results;
}
