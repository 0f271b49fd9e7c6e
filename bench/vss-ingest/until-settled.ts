/**
 * How the vss-ingest benchmarks wait for a consumer group to settle everything: first on a count the
 * consumer keeps in this process (free to read), then on the queue's group lag, which proves every
 * acknowledgement was recorded. The lag alone, polled every few milliseconds from the start, is
 * what the benchmarks did before, and on JetStream it perturbed what they measured: a lag read is a
 * consumer-info request per partition, which nats-server (2.9) answers at a cost of its CPU that
 * grows while the consumer is busy. Polled every 20 ms during a run of the queue and runner alone
 * it took the rate from ~50,000 to ~17,000 messages/s and the server's CPU from ~10 to ~51 µs per
 * message (bench/RESULTS.md, "vss-ingest"). The lag is now read only once the count says the
 * consumer has handled everything, so the wait ends at most one poll after the last acknowledgement.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface SettleWatch {
  /** Messages the consumer has handled so far (an in-process count: no call to the queue). */
  handled(): number | Promise<number>;
  /** How many there are to handle. */
  expected: number;
  /** The group's lag on the queue (pending plus unsettled, all partitions). */
  lag(): Promise<number>;
  pollMs: number;
}

/** Resolves once the consumer handled `expected` messages and the group's lag is zero. */
export async function untilSettled(watch: SettleWatch): Promise<void> {
  while ((await watch.handled()) < watch.expected) await sleep(watch.pollMs);
  while ((await watch.lag()) > 0) await sleep(watch.pollMs);
}
