/**
 * The embedded Queue adapter: everything in this process's memory, with the same guarantees as
 * JetStream for the processes that share it (that is, this one).
 *
 * - Without `journalDir`, messages live only in memory and are lost when the process exits.
 * - With `journalDir`, every publish, delivery and acknowledgement is appended to a journal
 *   (journal.ts) before it takes effect and replayed on open: a process killed at any point
 *   restarts with every unacknowledged message, which is delivered again (at least once), and with
 *   its de-duplication window. Only one process may open a journal directory at a time.
 *
 * Retention differs from JetStream in one way the port allows: a message is dropped as soon as
 * every existing group has acknowledged it (it is kept, up to `retentionMs` and `maxBytes`, while no
 * group exists). `maxBytes` bounds the topic as a whole, like a JetStream stream: past it the
 * message with the lowest sequence across all partitions goes first. Age is enforced on acks and by
 * a housekeeping pass every second, bytes on every publish; both release journal segments, and
 * every message discarded before all groups settled it is reported to `onDiscard`.
 */
import pino from 'pino';
import { describeError } from '../../errors.js';
import type { Logger } from '../../logging/index.js';
import type { DeliveryContext } from '../delivery.js';
import { QueueClosedError, TopicConflictError, TopicNotFoundError } from '../errors.js';
import { PartitionPicker } from '../partition.js';
import type {
  Consumer,
  DiscardReason,
  MessageHandler,
  PartitionLag,
  PublishOptions,
  PublishResult,
  Queue,
  SubscribeOptions,
  TopicConfig,
  TopicOptions,
  TopicStats,
} from '../queue.js';
import * as checks from '../validation.js';
import { type FsyncPolicy, Journal, type JournalRecord } from './journal.js';
import { MemoryConsumer } from './memory-consumer.js';
import { type StateSink, TopicState } from './memory-topic.js';

export interface MemoryQueueOptions {
  /** Directory of the journal; without it nothing survives the process. */
  journalDir?: string;
  /** When journal writes reach the disk; see journal.ts. Default `always`. */
  fsync?: FsyncPolicy;
  /** Period of the `interval` fsync policy. Default 200 ms. */
  fsyncIntervalMs?: number;
  /** Journal segment size at which a new segment starts. Default 64 MiB. */
  segmentBytes?: number;
  /** Largest message any topic accepts. Default 1 MiB, NATS's default, so limits match JetStream. */
  maxMessageBytes?: number;
  /**
   * Called for every message retention (`retentionMs`, `maxBytes`) discards before every group
   * settled it, or while no group existed. Not called for discards replayed from the journal.
   */
  onDiscard?: (topic: string, reason: DiscardReason) => void;
  logger?: Logger;
}

/** Messages a topic's retention discarded unsettled since this queue opened, by reason. */
export type DiscardCounts = Record<DiscardReason, number>;

const HOUSEKEEPING_MS = 1000;
const DONE = Promise.resolve();
/** No journal, or a replay: state changes are not written anywhere. */
const NO_SINK: StateSink = { write: () => 0, release: () => {} };

export class MemoryQueue implements Queue {
  readonly kind = 'memory';
  readonly maxMessageBytes: number;
  readonly #topics = new Map<string, TopicState>();
  readonly #consumers = new Set<MemoryConsumer>();
  readonly #picker = new PartitionPicker();
  readonly #logger: Logger;
  readonly #onDiscard: MemoryQueueOptions['onDiscard'];
  readonly #discarded = new Map<string, DiscardCounts>();
  readonly #housekeeping: NodeJS.Timeout;
  #journal: Journal | undefined;
  #sink: StateSink = NO_SINK;
  #closed = false;

  private constructor(options: MemoryQueueOptions) {
    this.maxMessageBytes = options.maxMessageBytes ?? 1024 * 1024;
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#onDiscard = options.onDiscard;
    this.#housekeeping = setInterval(() => this.#tidy(), HOUSEKEEPING_MS);
    this.#housekeeping.unref();
  }

  /** Opens the queue; with a journal, replays it first (FAILED_PRECONDITION if another process holds it). */
  static async open(options: MemoryQueueOptions = {}): Promise<MemoryQueue> {
    checks.checkMemoryOptions(options);
    const queue = new MemoryQueue(options);
    if (options.journalDir !== undefined) {
      try {
        queue.#openJournal(options.journalDir, options);
      } catch (err) {
        clearInterval(queue.#housekeeping);
        throw err;
      }
    }
    return queue;
  }

  /** Messages retention discarded from `topic` unsettled since the queue opened, by reason. */
  discarded(topic: string): DiscardCounts {
    return { ...(this.#discarded.get(topic) ?? { age: 0, bytes: 0 }) };
  }

  /** Journal segment files currently on disk (0 without a journal). */
  journalSegments(): number {
    return this.#journal?.segmentCount() ?? 0;
  }

  async ensureTopic(topic: string, options: TopicOptions = {}): Promise<TopicConfig> {
    this.#checkOpen('ensureTopic');
    const wanted = checks.resolveTopicConfig(topic, options, this.maxMessageBytes);
    if (wanted.deadLetterTopic !== false) {
      await this.ensureTopic(wanted.deadLetterTopic, checks.deadLetterTopicOptions(wanted));
    }
    const existing = this.#topics.get(topic);
    if (existing && existing.config.partitions !== wanted.partitions) {
      throw new TopicConflictError(
        topic,
        `has ${existing.config.partitions} partitions; ${wanted.partitions} were asked for (the partition count cannot change)`,
        'partitions',
      );
    }
    if (existing && JSON.stringify(existing.config) === JSON.stringify(wanted)) return existing.config;
    const nextSequence = existing?.nextSequence ?? 1;
    this.#sink.write([{ type: 'topic', config: wanted, nextSequence }]);
    if (existing) {
      existing.config = wanted;
      existing.discard(Date.now()); // a tighter retention applies now, not at the next housekeeping
    } else {
      const state = new TopicState(wanted, this.#sink);
      state.report = this.#reporter(topic);
      this.#topics.set(topic, state);
    }
    await this.#durable();
    return wanted;
  }

  async describeTopic(topic: string): Promise<TopicConfig> {
    this.#checkOpen('describeTopic');
    return this.#topic(topic).config;
  }

  async topicStats(topic: string): Promise<TopicStats> {
    this.#checkOpen('topicStats');
    const state = this.#topic(topic);
    return { messages: state.messages, bytes: state.bytes };
  }

  async groupLag(topic: string, group: string): Promise<PartitionLag[]> {
    this.#checkOpen('groupLag');
    const state = this.#topic(topic);
    checks.checkGroupName(group);
    const partitions = state.groups.get(group);
    return state.logs.map(
      (log, partition) =>
        partitions?.[partition]?.lag() ?? {
          partition,
          pending: log.size,
          unsettled: 0,
          delivered: 0,
          ackFloor: 0,
        },
    );
  }

  async deleteTopic(topic: string): Promise<boolean> {
    this.#checkOpen('deleteTopic');
    checks.checkTopicName(topic);
    const state = this.#topics.get(topic);
    if (!state) return false;
    this.#sink.write([{ type: 'deleteTopic', topic }]);
    this.#topics.delete(topic);
    this.#picker.forget(topic);
    await Promise.all([...this.#consumers].filter((c) => c.topic === topic).map((c) => c.close()));
    state.remove();
    await this.#durable();
    return true;
  }

  async publish(topic: string, payload: Uint8Array, options?: PublishOptions): Promise<PublishResult> {
    this.#checkOpen('publish');
    const state = this.#topic(topic);
    const message = checks.checkPublishOptions(options);
    checks.checkPartitionOf(state.config, message.partition);
    checks.checkMessageSize(state.config, payload, checks.storedHeaders(message));
    const now = Date.now();
    if (message.messageId !== undefined) {
      const original = state.duplicateOf(message.messageId, now);
      if (original) {
        await this.#durable();
        return { partition: original.partition, sequence: original.sequence, duplicate: true };
      }
    }
    const partition =
      message.partition ?? this.#picker.pick(topic, state.config.partitions, message.key, message.messageId);
    const sequence = state.nextSequence;
    const stored = {
      sequence,
      partition,
      key: message.key,
      messageId: message.messageId,
      // Frozen: every delivery hands out this one object.
      headers: Object.freeze(message.headers),
      payload: new Uint8Array(payload),
      publishedAtMs: now,
    };
    const segment = this.#sink.write([{ type: 'publish', topic, ...stored }]);
    this.#retain(state, segment, stored.messageId, now);
    state.append({ ...stored, segment, bytes: checks.storedBytes(stored) });
    await this.#durable();
    return { partition, sequence, duplicate: false };
  }

  async subscribe(
    topic: string,
    group: string,
    handler: MessageHandler,
    options?: SubscribeOptions,
  ): Promise<Consumer> {
    this.#checkOpen('subscribe');
    const state = this.#topic(topic);
    checks.checkGroupName(group);
    const subscribe = checks.checkSubscribeOptions(state.config, options);
    const { partitions, created } = state.group(group);
    if (created) {
      try {
        this.#sink.write([{ type: 'group', topic, group }]);
      } catch (err) {
        state.groups.delete(group);
        throw err;
      }
      await this.#durable();
    }
    const context: DeliveryContext = {
      config: state.config,
      group,
      subscribe,
      publish: (t, p, o) => this.publish(t, p, o),
      logger: this.#logger,
    };
    const consumer = new MemoryConsumer(
      handler,
      context,
      () => this.#durable(),
      (c) => this.#consumers.delete(c),
    );
    this.#consumers.add(consumer);
    consumer.attach(subscribe.partitions.map((p) => partitions[p]!));
    return consumer;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#housekeeping);
    await Promise.all([...this.#consumers].map((c) => c.close()));
    for (const state of this.#topics.values()) state.stop();
    await this.#journal?.close();
  }

  #topic(topic: string): TopicState {
    checks.checkTopicName(topic);
    const state = this.#topics.get(topic);
    if (!state) throw new TopicNotFoundError(topic);
    return state;
  }

  #reporter(topic: string): (reason: DiscardReason) => void {
    return (reason) => {
      let counts = this.#discarded.get(topic);
      if (!counts) {
        counts = { age: 0, bytes: 0 };
        this.#discarded.set(topic, counts);
      }
      counts[reason]++;
      try {
        this.#onDiscard?.(topic, reason);
      } catch (err) {
        this.#logger.error({ err: describeError(err), topic }, 'memory queue onDiscard hook failed');
      }
    };
  }

  #retain(state: TopicState, segment: number, messageId: string | undefined, publishedAtMs: number): void {
    const holdUntil = messageId === undefined ? 0 : publishedAtMs + state.config.dedupWindowMs;
    this.#journal?.retain(segment, holdUntil);
  }

  #durable(): Promise<void> {
    return this.#journal?.durable() ?? DONE;
  }

  #tidy(): void {
    try {
      const now = Date.now();
      for (const state of this.#topics.values()) state.discard(now);
      this.#journal?.compact(now);
    } catch (err) {
      this.#logger.error({ err: describeError(err) }, 'memory queue housekeeping failed');
    }
  }

  #checkOpen(what: string): void {
    if (this.#closed) throw new QueueClosedError(what);
  }

  #openJournal(dir: string, options: MemoryQueueOptions): void {
    const sink: StateSink = {
      write: (records) => {
        if (this.#closed || !this.#journal) throw new QueueClosedError('writing the queue journal');
        return this.#journal.append(records);
      },
      release: (segment) => this.#journal?.release(segment),
    };
    const apply = (record: JournalRecord, segment: number): void => {
      if (record.type === 'topic') {
        // Journals written before maxBytes existed hold configs without it: unbounded.
        const config: TopicConfig = { ...record.config, maxBytes: record.config.maxBytes };
        const existing = this.#topics.get(config.topic);
        if (existing) {
          existing.config = config;
          existing.nextSequence = Math.max(existing.nextSequence, record.nextSequence);
        } else {
          const state = new TopicState(config, NO_SINK);
          state.nextSequence = record.nextSequence;
          this.#topics.set(config.topic, state);
        }
        return;
      }
      if (record.type === 'deleteTopic') {
        this.#topics.delete(record.topic);
        return;
      }
      const state = this.#topics.get(record.topic);
      if (!state) return;
      if (record.type === 'group') {
        state.group(record.group);
      } else if (record.type === 'publish') {
        const { type: _type, topic: _topic, ...message } = record;
        state.append(
          {
            ...message,
            headers: Object.freeze(message.headers),
            key: message.key,
            messageId: message.messageId,
            segment,
            bytes: checks.storedBytes(message),
          },
          false,
        );
      } else if (record.type === 'deliver') {
        state
          .group(record.group)
          .partitions[record.partition]?.restoreDelivery(record.sequence, record.count);
      } else {
        state.group(record.group).partitions[record.partition]?.ack(record.sequence, false);
      }
    };
    const snapshot = (): JournalRecord[] => {
      const records: JournalRecord[] = [];
      for (const state of this.#topics.values()) {
        records.push({ type: 'topic', config: state.config, nextSequence: state.nextSequence });
        for (const group of state.groups.keys())
          records.push({ type: 'group', topic: state.config.topic, group });
      }
      return records;
    };
    this.#journal = Journal.open(
      dir,
      {
        fsync: options.fsync ?? 'always',
        fsyncIntervalMs: options.fsyncIntervalMs ?? 200,
        segmentBytes: options.segmentBytes ?? 64 * 1024 * 1024,
      },
      apply,
      snapshot,
    );
    // Hand the replayed topics the real sink, count what each segment still holds, then drop what
    // every group had acknowledged or what expired while the process was down.
    const now = Date.now();
    for (const state of this.#topics.values()) {
      state.sink = sink;
      for (const log of state.logs) {
        for (const message of log.from(0))
          this.#retain(state, message.segment, message.messageId, message.publishedAtMs);
      }
      state.discard(now);
      state.report = this.#reporter(state.config.topic);
    }
    this.#journal.compact(now);
    this.#sink = sink;
  }
}
