/**
 * The outbox relay: publishes the rows of the transactional outbox (`vss_outbox`, written in the
 * transaction that records an operation) to the queue in id order, keyed as recorded, and marks
 * them published once the queue holds them durably (`publish` resolved). It runs every
 * `pollIntervalMs` and at once when nudged (right after a submit in this process).
 *
 * At least once: a crash between the publish and the mark publishes the row again. Each row is
 * published with the message id `vss-outbox-<id>`, so the queue drops a republish within its
 * de-duplication window; beyond it the admin consumers see the event twice, which is harmless (they
 * drive the operation from its row, compare-and-set).
 */
import { describeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { Queue } from '../../../platform/queue/index.js';
import type { VssStore } from '../../store/index.js';

const BATCH = 100;

export interface OutboxRelayOptions {
  store: VssStore;
  queue: Queue;
  pollIntervalMs: number;
  logger: Logger;
}

export class OutboxRelay {
  readonly #o: OutboxRelayOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: OutboxRelayOptions) {
    this.#o = options;
  }

  start(): void {
    this.#timer = setInterval(() => void this.relay(), this.#o.pollIntervalMs);
    this.#timer.unref();
    void this.relay();
  }

  /** Publishes what is waiting now (and again if nudged meanwhile); resolves when done. */
  relay(): Promise<void> {
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#relayAll();
      } while (this.#again && !this.#stopped);
    })().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }

  async #relayAll(): Promise<void> {
    const { store, queue, logger } = this.#o;
    for (;;) {
      if (this.#stopped) return;
      let rows: Awaited<ReturnType<typeof store.operations.unpublishedOutbox>>;
      try {
        rows = await store.operations.unpublishedOutbox(BATCH);
      } catch (err) {
        logger.warn({ err: describeError(err) }, 'vss admin: reading the outbox failed');
        return;
      }
      const published: number[] = [];
      try {
        for (const row of rows) {
          await queue.publish(row.topic, Buffer.from(JSON.stringify(row.payload)), {
            key: row.key,
            messageId: `vss-outbox-${row.outboxId}`,
          });
          published.push(row.outboxId);
        }
      } catch (err) {
        logger.warn(
          { err: describeError(err) },
          'vss admin: publishing the outbox failed; retrying at the next poll',
        );
      }
      try {
        await store.operations.markOutboxPublished(published);
      } catch (err) {
        logger.warn({ err: describeError(err) }, 'vss admin: marking outbox rows published failed');
        return;
      }
      if (published.length < BATCH) return;
    }
  }
}
