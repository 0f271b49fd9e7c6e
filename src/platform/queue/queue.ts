/**
 * The `Queue` port: durable, partitioned topics with consumer groups, explicit acknowledgement,
 * delayed redelivery, dead letters and publish de-duplication. Services depend on this file only;
 * the adapters are `MemoryQueue` (embedded, optionally journaled to disk) and `JetStreamQueue`
 * (NATS JetStream), and both pass the same contract suite (test/platform/queue/contract.ts).
 *
 * Guarantees, the same for every adapter:
 *
 * - **At least once.** A message published (the `publish` promise resolved) is handed to every
 *   consumer group until the group settles it (ack, term, or dead letter after `maxDeliver`
 *   attempts), across consumer crashes and restarts. A consumer that dies, or a handler that
 *   neither settles nor finishes within `ackWaitMs`, gets the message redelivered. Handlers must
 *   therefore be idempotent: a message whose handler finished but whose ack was not recorded before
 *   a crash is delivered again.
 * - **Order per key.** Messages with the same key go to the same partition (a stable hash of the key,
 *   see partition.ts) and a partition is stored in publish order. With the default
 *   `inFlightPerPartition: 1`, a group has at most one unsettled message per partition, so same-key
 *   messages are handled strictly in publish order, including across retries (a failing message
 *   blocks its partition until it succeeds or is dead-lettered) and across crashes. Partitions are
 *   handled in parallel. Raising `inFlightPerPartition` trades this order for throughput.
 * - **De-duplication.** A publish carrying a `messageId` already stored on the topic within
 *   `dedupWindowMs` is not stored again; `publish` reports `duplicate: true` with the original's
 *   sequence. Outside the window the same id is a new message.
 * - **Retention.** A message is kept at most `retentionMs`, then discarded even if a group has not
 *   settled it; with `maxBytes`, the oldest messages of the topic (across its partitions) are also
 *   discarded, settled or not, as soon as the topic holds more than `maxBytes`. A group receives every
 *   message published after the group first subscribed that retention has not discarded; a group
 *   subscribing for the first time also receives the older messages the topic still retains (the
 *   JetStream adapter keeps everything within the limits; the memory adapter drops a message as soon
 *   as every existing group has acknowledged it). Nothing is discarded silently: the memory adapter
 *   reports each discard by reason (`age`, `bytes`) to its `onDiscard` hook (the platform counts
 *   them in `queue_discarded_messages_total`); JetStream's server discards, and `topicStats` shows
 *   what the topic still holds.
 * - **Dead letters.** A message that was delivered `maxDeliver` times without success, or that a
 *   handler rejects with `term()`, is published to the topic's dead-letter topic with
 *   {@link DeadLetterHeaders} and then settled on its own topic. Nothing is dropped silently.
 */

/** Settings of a topic. Omitted fields take the defaults in {@link TOPIC_DEFAULTS}. */
export interface TopicOptions {
  /** Number of partitions; keys hash onto them. Fixed once the topic exists. */
  partitions?: number;
  /** Delivery attempts before a message is dead-lettered. */
  maxDeliver?: number;
  /** How long a delivered message may stay unsettled before it is delivered again. */
  ackWaitMs?: number;
  /**
   * Where exhausted or terminated messages go; `ensureTopic` creates it (one partition). Defaults to
   * `<topic>-dlq`. `false` turns dead-lettering off: such messages are logged and dropped.
   */
  deadLetterTopic?: string | false;
  /** Publishes repeating a `messageId` within this window are stored once. */
  dedupWindowMs?: number;
  /** Messages older than this are discarded, settled or not. */
  retentionMs?: number;
  /**
   * Bytes the topic retains: past this, its oldest messages (across partitions) are discarded,
   * settled or not. A message counts its payload plus headers on the memory adapter; JetStream
   * counts its stored size, which adds the subject and a few dozen bytes of framing. Unbounded when
   * omitted.
   */
  maxBytes?: number;
  /**
   * Largest message (payload plus headers) the topic accepts. Defaults to, and may not exceed, the
   * adapter's ceiling: the server's `max_payload` for JetStream, `maxMessageBytes` for memory.
   */
  maxMessageBytes?: number;
}

export const TOPIC_DEFAULTS = {
  partitions: 1,
  maxDeliver: 5,
  ackWaitMs: 30_000,
  dedupWindowMs: 120_000,
  retentionMs: 7 * 24 * 3600_000,
} as const;

/** A topic's settings after defaults, as stored by the adapter. */
export interface TopicConfig {
  readonly topic: string;
  readonly partitions: number;
  readonly maxDeliver: number;
  readonly ackWaitMs: number;
  readonly deadLetterTopic: string | false;
  readonly dedupWindowMs: number;
  readonly retentionMs: number;
  /** Undefined: bounded by age alone. */
  readonly maxBytes: number | undefined;
  readonly maxMessageBytes: number;
}

/** What a topic holds now. */
export interface TopicStats {
  /** Messages retained (on the memory adapter, those some group has not yet acknowledged). */
  readonly messages: number;
  /** Their size, as the adapter counts it toward `maxBytes`. */
  readonly bytes: number;
}

/**
 * Where a consumer group stands on one partition: what it has yet to receive and what it holds
 * unsettled. `pending + unsettled` is the group's lag on the partition.
 */
export interface PartitionLag {
  readonly partition: number;
  /** Retained messages not yet delivered to the group. */
  readonly pending: number;
  /** Messages delivered to the group and not yet settled (in a handler, or waiting to be redelivered). */
  readonly unsettled: number;
  /**
   * Every message of the partition up to this sequence was delivered to the group at least once; 0
   * before the first delivery. (JetStream may report a later sequence of another partition that its
   * consumer skipped past.)
   */
  readonly delivered: number;
  /**
   * Every message of the partition up to this sequence is settled (or gone), so a sequence at or
   * below it is never delivered again; 0 before the first settle.
   */
  readonly ackFloor: number;
}

/** Why retention discarded a message that a group had not settled (or no group had seen). */
export type DiscardReason = 'age' | 'bytes';

export interface PublishOptions {
  /**
   * Messages with the same key land on the same partition, in order. Without a key the partition
   * follows the `messageId` (a retried publish lands where the first did), else round-robin.
   */
  key?: string;
  /**
   * Publishes to this partition (0 to partitions - 1; INVALID_ARGUMENT outside), whatever the key:
   * for markers that must reach every partition, such as vss's EOF markers. The key is still stored
   * with the message. Same-key order holds only if every publisher of the key picks the same partition.
   */
  partition?: number;
  /** De-duplication id (see the guarantees above). Up to 256 characters. */
  messageId?: string;
  /** Application headers; names starting with `Nats-` are reserved. Values are single-line text. */
  headers?: Readonly<Record<string, string>>;
}

export interface PublishResult {
  partition: number;
  /** Position on the topic, increasing in publish order across all partitions. */
  sequence: number;
  /** True when the `messageId` was already stored: nothing new was written. */
  duplicate: boolean;
}

/** A delivered message. Settle it exactly once with `ack`, `nak` or `term`; later calls are no-ops. */
export interface QueueMessage {
  readonly topic: string;
  readonly partition: number;
  readonly sequence: number;
  readonly key: string | undefined;
  readonly messageId: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The message's bytes, read-only: the memory adapter hands every delivery the bytes it stores, so
   * writing into them would change what later deliveries and other groups receive. Copy first.
   */
  readonly payload: Uint8Array;
  readonly publishedAt: Date;
  /** 1 on the first delivery to this group, counting redeliveries after nak, failures and ack waits. */
  readonly deliveryCount: number;
  /** True once `ack`, `nak` or `term` was called. */
  readonly settled: boolean;

  /** Done: the group never sees the message again. Resolves once the adapter recorded it. */
  ack(): Promise<void>;
  /** Not now: deliver again after `delayMs` (default 0). Counts as a delivery attempt. */
  nak(delayMs?: number): Promise<void>;
  /**
   * Never: publish it to the dead-letter topic now, with `reason` as its last error (and `field`, the
   * offending field of the payload, when given), and settle it.
   */
  term(reason?: string, details?: TermDetails): Promise<void>;
  /** Still working: restart the `ackWaitMs` clock so a slow handler does not get a redelivery. */
  inProgress(): Promise<void>;
}

/** What a handler can tell about a message it rejects for good, besides the reason. */
export interface TermDetails {
  /** The field of the payload at fault, e.g. `index_space.embedding`; a single line. */
  field?: string;
}

export type MessageHandler = (message: QueueMessage) => void | Promise<void>;

export interface SubscribeOptions {
  /** Partitions this member handles; default all. Give each member of a group its own set to spread load. */
  partitions?: readonly number[];
  /** Handlers this member runs at once, across its partitions. Default: one per partition. */
  concurrency?: number;
  /**
   * Unsettled messages a group may have per partition. 1 (default) keeps strict per-key order across
   * retries and crashes; more lets a partition's messages be handled concurrently, without order.
   * A group-wide setting: the last member to subscribe sets it.
   */
  inFlightPerPartition?: number;
  /** Ack the message when the handler returns without settling it. Default true. */
  autoAck?: boolean;
  /**
   * Delay before redelivering a message whose handler threw, by attempt (the last entry repeats).
   * Default [500, 2000, 10000, 30000] ms.
   */
  retryBackoffMs?: readonly number[];
}

/** One member of a consumer group, returned by `subscribe`. */
export interface Consumer {
  readonly topic: string;
  readonly group: string;
  readonly partitions: readonly number[];
  /**
   * Stops at once: no handler starts after this. Handlers still running may settle their messages;
   * a message they leave unsettled is redelivered, to another member, after `ackWaitMs`. (JetStream
   * only: with `inFlightPerPartition` above 1, messages fetched but not yet handed to a handler are
   * nak'd, and one the server sends in the instant of closing waits for `ackWaitMs`.)
   */
  close(): Promise<void>;
  /** Stops taking messages and waits (up to `timeoutMs`, default 30 s) for running handlers to settle. */
  drain(timeoutMs?: number): Promise<void>;
  /** Resolves when the member stopped, by `close`, `drain`, the queue closing or the topic going away. */
  readonly closed: Promise<void>;
}

export interface Queue {
  /** Which adapter this is, for logs and health output. */
  readonly kind: 'memory' | 'jetstream';

  /**
   * Creates the topic, or checks and updates an existing one (and its dead-letter topic).
   * Idempotent; safe to call from every process at start-up. Changed settings apply to members that
   * subscribe afterwards. A different partition count than the existing topic's fails with
   * TopicConflictError.
   */
  ensureTopic(topic: string, options?: TopicOptions): Promise<TopicConfig>;

  /** The topic's settings; TopicNotFoundError when it does not exist. */
  describeTopic(topic: string): Promise<TopicConfig>;

  /** How many messages and bytes the topic holds now; TopicNotFoundError when it does not exist. */
  topicStats(topic: string): Promise<TopicStats>;

  /**
   * The consumer group's position on each partition of the topic, in partition order. A group that
   * never subscribed has everything the topic retains pending. TopicNotFoundError when the topic
   * does not exist.
   */
  groupLag(topic: string, group: string): Promise<PartitionLag[]>;

  /** Deletes the topic with its messages and groups (not its dead-letter topic). False if absent. */
  deleteTopic(topic: string): Promise<boolean>;

  /**
   * Stores one message. Resolves once it is durable (on the server, or in the journal); the
   * message is then delivered at least once to every group. Fails with TopicNotFoundError,
   * MessageTooLargeError, INVALID_ARGUMENT for a bad key/id/header/partition, or UNAVAILABLE /
   * DEADLINE_EXCEEDED when the server does not answer in time.
   */
  publish(topic: string, payload: Uint8Array, options?: PublishOptions): Promise<PublishResult>;

  /**
   * Joins the durable consumer `group` on `topic` and runs `handler` for its messages: one message
   * at a time per partition, partitions in parallel (see the guarantees above). A handler that
   * throws gets its message redelivered after `retryBackoffMs`; after the topic's `maxDeliver`
   * attempts the message goes to the dead-letter topic. Groups are durable: a group that
   * resubscribes continues where it left off.
   */
  subscribe(
    topic: string,
    group: string,
    handler: MessageHandler,
    options?: SubscribeOptions,
  ): Promise<Consumer>;

  /** Closes every consumer (as `Consumer.close`) and releases the connection or journal. */
  close(): Promise<void>;
}

/** Headers a dead-lettered message carries, besides its original headers and key. */
export const DeadLetterHeaders = {
  originTopic: 'Lattice-Origin-Topic',
  originPartition: 'Lattice-Origin-Partition',
  originSequence: 'Lattice-Origin-Sequence',
  originGroup: 'Lattice-Origin-Group',
  originMessageId: 'Lattice-Origin-Message-Id',
  attempts: 'Lattice-Attempts',
  lastError: 'Lattice-Last-Error',
  /** The payload field the last error names, when the handler gave one (`term(reason, { field })`). */
  lastErrorField: 'Lattice-Last-Error-Field',
  deadLetteredAt: 'Lattice-Dead-Lettered-At',
} as const;

/**
 * The message id of the dead letter of `sequence` of `topic`, dead-lettered by `group`: one dead
 * letter per message and group, even if settling the original is lost in a crash. Operators name a
 * dead letter by it (e.g. `lattice vss replay --id`).
 */
export function deadLetterId(topic: string, group: string, sequence: number): string {
  return `${topic}:${group}:${sequence}`;
}
