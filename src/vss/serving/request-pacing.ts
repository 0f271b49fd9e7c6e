/**
 * Cooperative scheduling of a request's long loops (the queries of a Search, the ids of a look-up),
 * so one large request neither holds the event loop for seconds nor keeps working after its caller
 * has gone. A vector DB answer that is already computed resolves as a microtask: a Search of 256
 * queries used to run all of them without the event loop ever turning, deaf to its own deadline timer
 * and to every other call.
 *
 * `pace()` between units of work: it throws once the call is cancelled or past its deadline (read
 * from the clock, since a busy loop runs the deadline timer late), and once the event loop's current
 * turn has been busy for {@link SLICE_MS} it gives the loop a turn first (setImmediate: timers, I/O
 * and other calls run). The first check of a turn starts the slice, so a small request pays one clock
 * read per unit and never an extra turn.
 */
import { LatticeError } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';

/** How long one turn of the event loop may run before a long loop gives it back. */
export const SLICE_MS = 5;

let sliceStart = -1;
const endSlice = () => {
  sliceStart = -1;
};

function sliceOver(): boolean {
  const now = performance.now();
  if (sliceStart < 0) {
    sliceStart = now;
    setImmediate(endSlice);
    return false;
  }
  return now - sliceStart >= SLICE_MS;
}

/** Throws the call's own reason when it was cancelled or its deadline has passed. */
export function stopIfOver(context: Pick<CallContext, 'signal' | 'deadline'>): void {
  const { signal, deadline } = context;
  if (signal.aborted) {
    throw signal.reason instanceof LatticeError
      ? signal.reason
      : new LatticeError('CANCELLED', 'the call was cancelled', { cause: signal.reason });
  }
  if (deadline <= Date.now()) throw new LatticeError('DEADLINE_EXCEEDED', 'the call deadline passed');
}

/** Between units of a call's work: stop when the call is over, give the event loop a turn when the slice is. */
export async function pace(context: Pick<CallContext, 'signal' | 'deadline'>): Promise<void> {
  if (sliceOver()) await new Promise<void>((resolve) => setImmediate(resolve));
  stopIfOver(context);
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
