/**
 * The vss consumer runner: drives any `EventBatchHandler` (embedding events and EOF markers,
 * real-time events) from a topic of the `Queue` port, in a durable consumer group.
 *
 * - **Batches.** The group may hold up to two batches of unsettled messages per partition (the
 *   queue's `inFlightPerPartition`, auto-ack off), so the next batch fills while one is applied. Each
 *   partition is a lane (partition-lane.ts) that keeps its messages in sequence order and applies
 *   one batch at a time; partitions run in parallel.
 * - **Acknowledgement.** A message is acknowledged only after `apply` resolved for it, and a
 *   partition's next batch starts only once every message of the previous one is settled.
 *   Redelivery (a crash before the acknowledgement was recorded) is harmless: processors are
 *   idempotent.
 * - **Failures.** Rejections go to the dead-letter topic at once; transient failures are retried in
 *   place with backoff, then dead-lettered (batch-applier.ts says why in place).
 * - **Order across crashes.** Before joining, the runner reads the group's position on each
 *   partition; a partition with messages left unsettled by an earlier member stays shut until they
 *   are back (ordering-gate.ts). One runner per partition: members of the same group must split the
 *   partitions between them (`partitions`), since two runners on one partition would each apply
 *   part of it at once.
 * - **Lag.** The group's lag per partition is read every `lagIntervalMs` into `vss_consumer_lag`.
 *
 * A failed acknowledgement leaves a partition's state on the queue unknown, so the runner then
 * re-joins as if it had crashed: it drops what it holds (redelivered by the queue) and subscribes
 * again behind fresh ordering gates.
 */
import pino from 'pino';
import { describeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { Metrics } from '../../platform/metrics/index.js';
import type { Consumer, Queue } from '../../platform/queue/index.js';
import { pause } from '../../platform/scheduling/index.js';
import { BatchApplier } from './batch-applier.js';
import { ConsumerMetrics } from './consumer-metrics.js';
import type { EventBatchHandler } from './event-batch.js';
import { OrderingGate } from './ordering-gate.js';
import { PartitionLane } from './partition-lane.js';
import { RetryBackoff, type RetrySettings } from './retry-backoff.js';

export interface ConsumerRunnerOptions<E> {
  queue: Queue;
  /** The topic to consume; it must exist (see vss-topics.ts). */
  topic: string;
  /** The durable consumer group. */
  group: string;
  handler: EventBatchHandler<E>;
  /** Most events in one `apply` call. */
  batchSize: number;
  /** Longest wait for a batch to fill after its first message arrived, ms. */
  lingerMs: number;
  retry: RetrySettings;
  /** Partitions this runner handles; default all. Runners of one group must not share a partition. */
  partitions?: readonly number[];
  metrics: Metrics;
  logger?: Logger;
  /** How often the lag gauge is refreshed, ms; default 5000. */
  lagIntervalMs?: number;
}

/** The queue's ceiling on `inFlightPerPartition`. */
const MAX_WINDOW = 10_000;
const GATE_POLL_MS = 250;
const REJOIN_DELAY_MS = 1000;

/** One subscription with its lanes; replaced whole when the runner re-joins. */
interface Membership<E> {
  readonly consumer: Consumer;
  readonly lanes: Map<number, PartitionLane<E>>;
  readonly timers: NodeJS.Timeout[];
}

export class ConsumerRunner<E> {
  readonly topic: string;
  readonly group: string;
  readonly #options: ConsumerRunnerOptions<E>;
  readonly #logger: Logger;
  readonly #metrics: ConsumerMetrics;
  readonly #applier: BatchApplier<E>;
  readonly #closing = new AbortController();
  #membership: Membership<E> | undefined;
  #rejoining: Promise<void> | undefined;
  #lagTimer: NodeJS.Timeout | undefined;

  private constructor(options: ConsumerRunnerOptions<E>) {
    this.topic = options.topic;
    this.group = options.group;
    this.#options = options;
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#metrics = new ConsumerMetrics(options.metrics);
    this.#applier = new BatchApplier(
      options.handler,
      new RetryBackoff(options.retry),
      this.#metrics.series(options.topic, options.handler.kind),
      this.#logger,
      options.topic,
    );
  }

  /** Joins the group and starts consuming. Fails when the topic does not exist or the queue is down. */
  static async start<E>(options: ConsumerRunnerOptions<E>): Promise<ConsumerRunner<E>> {
    const runner = new ConsumerRunner(options);
    runner.#membership = await runner.#join();
    const every = options.lagIntervalMs ?? 5000;
    runner.#lagTimer = setInterval(() => void runner.#recordLag(), every);
    runner.#lagTimer.unref();
    void runner.#recordLag();
    return runner;
  }

  /** Partitions this runner handles. */
  get partitions(): number[] {
    return [...(this.#membership?.lanes.keys() ?? [])];
  }

  /**
   * Stops taking messages, lets running batches finish (retry waits cut short: their events stay
   * unsettled), and hands every message it still holds back to the queue for redelivery.
   */
  async close(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    this.#closing.abort();
    clearInterval(this.#lagTimer);
    await this.#rejoining;
    const membership = this.#membership;
    if (!membership) return;
    this.#stopTimers(membership);
    await membership.consumer.close();
    await Promise.all([...membership.lanes.values()].map((lane) => lane.close()));
  }

  /**
   * Stops at once, settling nothing more, exactly as if the process had died: the queue redelivers
   * what the runner held, after its ack wait. For tests and fatal errors.
   */
  async abort(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    this.#closing.abort();
    clearInterval(this.#lagTimer);
    const membership = this.#membership;
    if (!membership) return;
    this.#stopTimers(membership);
    for (const lane of membership.lanes.values()) lane.abort();
    await membership.consumer.close();
  }

  async #join(): Promise<Membership<E>> {
    const { queue, topic, group, batchSize, lingerMs } = this.#options;
    const config = await queue.describeTopic(topic);
    const partitions = [
      ...new Set(this.#options.partitions ?? Array.from({ length: config.partitions }, (_, p) => p)),
    ].sort((a, b) => a - b);
    // Read before subscribing: every message unsettled now belongs to an earlier member.
    const positions = await queue.groupLag(topic, group);
    const lanes = new Map<number, PartitionLane<E>>();
    for (const partition of partitions) {
      const position = positions[partition];
      const gate = new OrderingGate(position?.delivered ?? 0, position?.unsettled ?? 0);
      if (!gate.open) {
        this.#logger.info(
          { topic, group, partition, unsettled: position?.unsettled, horizon: gate.horizon },
          'vss consumer waits for messages an earlier member left unsettled before applying newer ones',
        );
      }
      lanes.set(
        partition,
        new PartitionLane({
          partition,
          applier: this.#applier,
          gate,
          maxBatch: batchSize,
          lingerMs,
          signal: this.#closing.signal,
          onSettleFailure: (err) => this.#settleFailed(err),
          logger: this.#logger,
        }),
      );
    }
    // Two batches per partition: one being applied, the next filling. The handler only hands the
    // message to its lane, so the queue's handler concurrency stays at its default.
    const window = Math.min(2 * batchSize, MAX_WINDOW);
    const consumer = await queue.subscribe(
      topic,
      group,
      (message) => lanes.get(message.partition)?.receive(message),
      { partitions, inFlightPerPartition: window, autoAck: false },
    );
    const membership: Membership<E> = { consumer, lanes, timers: [] };
    // Held messages (a batch waiting out a retry, a shut gate) report progress well within the ack wait.
    const heartbeatMs = Math.max(50, Math.floor(config.ackWaitMs / 3));
    membership.timers.push(
      setInterval(() => {
        const now = Date.now();
        for (const lane of lanes.values()) lane.heartbeat(now, heartbeatMs);
      }, heartbeatMs),
    );
    if ([...lanes.values()].some((lane) => !lane.gate.open)) this.#watchGates(membership);
    void consumer.closed.then(() => {
      if (this.#membership === membership && !this.#closing.signal.aborted) {
        this.#settleFailed(new Error('the queue consumer stopped'));
      }
    });
    return membership;
  }

  /** Polls the group's position while some partition's gate is shut, and opens gates it can. */
  #watchGates(membership: Membership<E>): void {
    const { queue, topic, group } = this.#options;
    let polling = false;
    const timer = setInterval(async () => {
      if (polling) return;
      const shut = [...membership.lanes.values()].filter((lane) => !lane.gate.open);
      if (shut.length === 0) {
        clearInterval(timer);
        return;
      }
      polling = true;
      try {
        const heldBefore = new Map(shut.map((lane) => [lane.partition, lane.held]));
        const positions = await queue.groupLag(topic, group);
        for (const lane of shut) {
          const position = positions[lane.partition];
          if (position) lane.gate.observed(position, heldBefore.get(lane.partition) ?? 0);
          if (lane.gate.open) {
            this.#logger.info(
              { topic, group, partition: lane.partition },
              'vss consumer partition open again',
            );
          }
        }
      } catch (err) {
        this.#logger.warn(
          { topic, group, err: describeError(err) },
          'could not read the consumer group position',
        );
      } finally {
        polling = false;
      }
      for (const lane of shut) lane.schedule();
    }, GATE_POLL_MS);
    membership.timers.push(timer);
  }

  /** A settle failed or the subscription ended: drop everything held and join again. */
  #settleFailed(err: unknown): void {
    if (this.#rejoining || this.#closing.signal.aborted) return;
    this.#logger.error(
      { topic: this.topic, group: this.group, err: describeError(err) },
      'vss consumer lost track of what the queue recorded; re-joining the group (held messages are redelivered)',
    );
    this.#rejoining = (async () => {
      const old = this.#membership;
      this.#membership = undefined;
      if (old) {
        this.#stopTimers(old);
        for (const lane of old.lanes.values()) lane.abort();
        await old.consumer.close().catch(() => undefined);
      }
      for (let attempt = 1; !this.#closing.signal.aborted; attempt++) {
        await pause(REJOIN_DELAY_MS * Math.min(attempt, 10), this.#closing.signal);
        if (this.#closing.signal.aborted) break;
        try {
          this.#membership = await this.#join();
          this.#logger.info({ topic: this.topic, group: this.group }, 'vss consumer re-joined its group');
          break;
        } catch (joinErr) {
          this.#logger.error(
            { topic: this.topic, group: this.group, attempt, err: describeError(joinErr) },
            'vss consumer could not re-join its group; trying again',
          );
        }
      }
    })().finally(() => {
      this.#rejoining = undefined;
    });
  }

  #stopTimers(membership: Membership<E>): void {
    for (const timer of membership.timers) clearInterval(timer);
  }

  async #recordLag(): Promise<void> {
    const membership = this.#membership;
    if (!membership) return;
    try {
      const positions = await this.#options.queue.groupLag(this.topic, this.group);
      for (const partition of membership.lanes.keys()) {
        const position = positions[partition];
        if (position)
          this.#metrics.lag(this.topic, this.group, partition, position.pending + position.unsettled);
      }
    } catch (err) {
      if (!this.#closing.signal.aborted) {
        this.#logger.warn(
          { topic: this.topic, group: this.group, err: describeError(err) },
          'could not read the consumer group lag',
        );
      }
    }
  }
}
