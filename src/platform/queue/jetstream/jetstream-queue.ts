/**
 * The distributed Queue adapter on NATS JetStream (layout in jetstream-topics.ts). Every server call
 * has a deadline, so a stalled or unreachable server surfaces as UNAVAILABLE / DEADLINE_EXCEEDED
 * instead of a hang; the connection itself reconnects on its own.
 */
import {
  type ConsumerInfo,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  type StreamInfo,
} from '@nats-io/jetstream';
import { connect, type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import pino from 'pino';
import { describeError, LatticeError } from '../../errors.js';
import type { Logger } from '../../logging/index.js';
import { withTimeout } from '../../timeout.js';
import type { DeliveryContext } from '../delivery.js';
import { QueueClosedError, TopicConflictError, TopicNotFoundError } from '../errors.js';
import { PartitionPicker } from '../partition.js';
import type {
  Consumer,
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
import {
  checkGroupName,
  checkJetStreamOptions,
  checkMessageSize,
  checkPartitionOf,
  checkPublishOptions,
  checkSubscribeOptions,
  checkTopicName,
  deadLetterTopicOptions,
  KEY_HEADER,
  resolveTopicConfig,
  storedHeaders,
} from '../validation.js';
import { JetStreamConsumer } from './jetstream-consumer.js';
import { isConsumerNotFound, isNoResponders, isStreamNotFound, toQueueError } from './jetstream-errors.js';
import {
  consumerConfig,
  durableName,
  partitionSubject,
  streamConfig,
  topicConfigFromStream,
} from './jetstream-topics.js';

const TOPIC_CACHE_MS = 30_000;

export interface JetStreamQueueOptions {
  /** NATS server URLs, e.g. `nats://127.0.0.1:4222`. */
  servers: string[];
  /** Client name shown in the server's connection list. */
  name?: string;
  user?: string;
  pass?: string;
  token?: string;
  /** Deadline for the first connection. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Deadline for each server call (publish, stream and consumer management, ack). Default 5000 ms. */
  requestTimeoutMs?: number;
  /** Stream replicas on a JetStream cluster. Default 1. */
  replicas?: number;
  logger?: Logger;
}

export class JetStreamQueue implements Queue {
  readonly kind = 'jetstream';
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #requestTimeoutMs: number;
  readonly #replicas: number;
  readonly #logger: Logger;
  readonly #picker = new PartitionPicker();
  /** Topic settings by name, re-read after TOPIC_CACHE_MS so changes by other processes show up. */
  readonly #topics = new Map<string, { config: Promise<TopicConfig>; readAt: number }>();
  readonly #consumers = new Set<JetStreamConsumer>();
  #flushing: Promise<void> | undefined;
  #closed = false;

  private constructor(nc: NatsConnection, jsm: JetStreamManager, options: JetStreamQueueOptions) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 5000;
    this.#js = jetstream(nc, { timeout: this.#requestTimeoutMs });
    this.#replicas = options.replicas ?? 1;
    this.#logger = options.logger ?? pino({ level: 'silent' });
  }

  /** Connects and checks that JetStream answers; UNAVAILABLE within `connectTimeoutMs` otherwise. */
  static async connect(options: JetStreamQueueOptions): Promise<JetStreamQueue> {
    checkJetStreamOptions(options);
    const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    const requestTimeoutMs = options.requestTimeoutMs ?? 5000;
    const where = options.servers.join(', ');
    let nc: NatsConnection | undefined;
    try {
      nc = await withTimeout(
        `connecting to NATS at ${where}`,
        connectTimeoutMs,
        () =>
          connect({
            servers: options.servers,
            name: options.name ?? 'lattice-queue',
            timeout: connectTimeoutMs,
            maxReconnectAttempts: -1,
            ...(options.user === undefined ? {} : { user: options.user }),
            ...(options.pass === undefined ? {} : { pass: options.pass }),
            ...(options.token === undefined ? {} : { token: options.token }),
          }),
        'UNAVAILABLE',
      );
      const connection = nc;
      const jsm = await withTimeout(
        `checking JetStream at ${where}`,
        requestTimeoutMs,
        () => jetstreamManager(connection, { timeout: requestTimeoutMs }),
        'UNAVAILABLE',
      );
      return new JetStreamQueue(connection, jsm, options);
    } catch (err) {
      await nc?.close().catch(() => undefined);
      const mapped = toQueueError(err, `connecting to NATS JetStream at ${where}`);
      throw mapped.code === 'INTERNAL' || mapped.code === 'DEADLINE_EXCEEDED'
        ? new LatticeError('UNAVAILABLE', mapped.message, { cause: err })
        : mapped;
    }
  }

  /** The server's largest message: the ceiling for every topic's `maxMessageBytes`. */
  get maxPayload(): number {
    return this.#nc.info?.max_payload ?? 1024 * 1024;
  }

  async ensureTopic(topic: string, options: TopicOptions = {}): Promise<TopicConfig> {
    this.#checkOpen('ensureTopic');
    const wanted = resolveTopicConfig(topic, options, this.maxPayload);
    if (wanted.deadLetterTopic !== false) {
      await this.ensureTopic(wanted.deadLetterTopic, deadLetterTopicOptions(wanted));
    }
    const config = streamConfig(wanted, this.#replicas);
    const existing = await this.#streamInfo(topic);
    let info: StreamInfo;
    if (existing === undefined) {
      info = await this.#call(`creating queue topic "${topic}"`, () => this.#jsm.streams.add(config)).catch(
        async (err: unknown) => {
          // Another process may have created it first; fall through to the update path then.
          const raced = await this.#streamInfo(topic);
          if (raced === undefined) throw err;
          return this.#update(wanted, raced, config);
        },
      );
    } else {
      info = await this.#update(wanted, existing, config);
    }
    const stored = topicConfigFromStream(info.config, this.maxPayload);
    this.#topics.set(topic, { config: Promise.resolve(stored), readAt: Date.now() });
    return stored;
  }

  async describeTopic(topic: string): Promise<TopicConfig> {
    this.#checkOpen('describeTopic');
    checkTopicName(topic);
    const cached = this.#topics.get(topic);
    if (cached && Date.now() - cached.readAt < TOPIC_CACHE_MS) return cached.config;
    const config = this.#streamInfo(topic).then((info) => {
      if (info === undefined) throw new TopicNotFoundError(topic);
      return topicConfigFromStream(info.config, this.maxPayload);
    });
    const entry = { config, readAt: Date.now() };
    this.#topics.set(topic, entry);
    config.catch(() => {
      if (this.#topics.get(topic) === entry) this.#topics.delete(topic);
    });
    return config;
  }

  async topicStats(topic: string): Promise<TopicStats> {
    this.#checkOpen('topicStats');
    checkTopicName(topic);
    const info = await this.#streamInfo(topic);
    if (info === undefined) throw new TopicNotFoundError(topic);
    return { messages: info.state.messages, bytes: info.state.bytes };
  }

  /**
   * From each partition's durable consumer: `num_pending` (not yet delivered), `num_ack_pending`
   * (unsettled), the delivered and ack-floor stream sequences. A partition without a consumer (the
   * group never subscribed to it) has every message of its subject pending.
   */
  async groupLag(topic: string, group: string): Promise<PartitionLag[]> {
    this.#checkOpen('groupLag');
    checkTopicName(topic);
    checkGroupName(group);
    const config = await this.describeTopic(topic);
    let perSubject: Promise<Record<string, number>> | undefined;
    const subjectCounts = () => {
      perSubject ??= this.#call(`reading queue topic "${topic}"`, () =>
        this.#jsm.streams.info(topic, { subjects_filter: `${topic}.*` }),
      ).then((info) => info.state.subjects ?? {});
      return perSubject;
    };
    return Promise.all(
      Array.from({ length: config.partitions }, async (_, partition): Promise<PartitionLag> => {
        const info = await this.#consumerInfo(topic, durableName(group, partition));
        if (info === undefined) {
          const pending = (await subjectCounts())[partitionSubject(topic, partition)] ?? 0;
          return { partition, pending, unsettled: 0, delivered: 0, ackFloor: 0 };
        }
        return {
          partition,
          pending: info.num_pending,
          unsettled: info.num_ack_pending,
          delivered: info.delivered.stream_seq,
          ackFloor: info.ack_floor.stream_seq,
        };
      }),
    );
  }

  async deleteTopic(topic: string): Promise<boolean> {
    this.#checkOpen('deleteTopic');
    checkTopicName(topic);
    this.#topics.delete(topic);
    this.#picker.forget(topic);
    try {
      return await this.#call(`deleting queue topic "${topic}"`, () => this.#jsm.streams.delete(topic));
    } catch (err) {
      if (isStreamNotFound(err) || isStreamNotFound((err as Error).cause)) return false;
      throw err;
    }
  }

  async publish(topic: string, payload: Uint8Array, options?: PublishOptions): Promise<PublishResult> {
    this.#checkOpen('publish');
    checkTopicName(topic);
    const message = checkPublishOptions(options);
    const config = await this.describeTopic(topic);
    checkPartitionOf(config, message.partition);
    checkMessageSize(config, payload, storedHeaders(message));
    const partition =
      message.partition ?? this.#picker.pick(topic, config.partitions, message.key, message.messageId);
    const headers = natsHeaders();
    for (const [name, value] of Object.entries(message.headers)) headers.set(name, value);
    if (message.key !== undefined) headers.set(KEY_HEADER, message.key);
    try {
      const ack = await this.#call(`publishing to queue topic "${topic}"`, () =>
        this.#js.publish(partitionSubject(topic, partition), payload, {
          headers,
          timeout: this.#requestTimeoutMs,
          ...(message.messageId === undefined ? {} : { msgID: message.messageId }),
        }),
      );
      return { partition, sequence: ack.seq, duplicate: ack.duplicate };
    } catch (err) {
      if (isNoResponders((err as Error).cause)) {
        // The stream may be gone: forget the cached settings and say so if it is.
        this.#topics.delete(topic);
        if ((await this.#streamInfo(topic)) === undefined) throw new TopicNotFoundError(topic);
      }
      throw err;
    }
  }

  async subscribe(
    topic: string,
    group: string,
    handler: MessageHandler,
    options?: SubscribeOptions,
  ): Promise<Consumer> {
    this.#checkOpen('subscribe');
    checkTopicName(topic);
    checkGroupName(group);
    const config = await this.describeTopic(topic);
    const subscribe = checkSubscribeOptions(config, options);
    for (const partition of subscribe.partitions) {
      await this.#call(`creating consumer group "${group}" on queue topic "${topic}"`, () =>
        this.#jsm.consumers.add(
          topic,
          consumerConfig(config, group, partition, subscribe.inFlightPerPartition),
        ),
      );
    }
    const context: DeliveryContext = {
      config,
      group,
      subscribe,
      publish: (t, p, o) => this.publish(t, p, o),
      logger: this.#logger,
    };
    const consumer = new JetStreamConsumer(
      this.#js,
      handler,
      context,
      () => this.#received(),
      (c) => this.#consumers.delete(c),
    );
    this.#consumers.add(consumer);
    try {
      await this.#call(`subscribing to queue topic "${topic}"`, () => consumer.start());
    } catch (err) {
      // A start cut short by the timeout goes on in the background: stop it, or the caller, told the
      // subscription failed, would still get messages.
      await consumer.close();
      this.#consumers.delete(consumer);
      throw err;
    }
    return consumer;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#consumers].map((c) => c.close()));
    try {
      await withTimeout('closing the NATS connection', this.#requestTimeoutMs, () => this.#nc.drain());
    } catch (err) {
      this.#logger.warn({ err: describeError(err) }, 'NATS connection did not drain in time; closing it');
      await this.#nc.close().catch(() => undefined);
    }
  }

  async #update(
    wanted: TopicConfig,
    existing: StreamInfo,
    config: ReturnType<typeof streamConfig>,
  ): Promise<StreamInfo> {
    const current = topicConfigFromStream(existing.config, this.maxPayload);
    if (current.partitions !== wanted.partitions) {
      throw new TopicConflictError(
        wanted.topic,
        `has ${current.partitions} partitions; ${wanted.partitions} were asked for (the partition count cannot change)`,
        'partitions',
      );
    }
    const same =
      current.maxDeliver === wanted.maxDeliver &&
      current.ackWaitMs === wanted.ackWaitMs &&
      current.deadLetterTopic === wanted.deadLetterTopic &&
      current.dedupWindowMs === wanted.dedupWindowMs &&
      current.retentionMs === wanted.retentionMs &&
      current.maxBytes === wanted.maxBytes &&
      current.maxMessageBytes === wanted.maxMessageBytes;
    if (same) return existing;
    const { name: _name, ...update } = config;
    return this.#call(`updating queue topic "${wanted.topic}"`, () =>
      this.#jsm.streams.update(wanted.topic, { ...update, subjects: existing.config.subjects }),
    );
  }

  async #streamInfo(topic: string): Promise<StreamInfo | undefined> {
    try {
      return await this.#call(`reading queue topic "${topic}"`, () => this.#jsm.streams.info(topic));
    } catch (err) {
      if (isStreamNotFound(err) || isStreamNotFound((err as Error).cause)) return undefined;
      throw err;
    }
  }

  /**
   * Resolves once the server has received everything this connection sent before the call (a PING
   * it answers in order). Calls in the same moment share one round trip.
   */
  #received(): Promise<void> {
    this.#flushing ??= Promise.resolve().then(() => {
      this.#flushing = undefined;
      return this.#call('confirming acknowledgements with NATS', () => this.#nc.flush());
    });
    return this.#flushing;
  }

  async #consumerInfo(topic: string, durable: string): Promise<ConsumerInfo | undefined> {
    try {
      return await this.#call(`reading consumer group "${durable}" of queue topic "${topic}"`, () =>
        this.#jsm.consumers.info(topic, durable),
      );
    } catch (err) {
      const cause = (err as Error).cause;
      if (isConsumerNotFound(err) || isConsumerNotFound(cause)) return undefined;
      if (isStreamNotFound(err) || isStreamNotFound(cause)) throw new TopicNotFoundError(topic);
      throw err;
    }
  }

  /** Runs one server call with the request deadline, mapping failures to LatticeErrors. */
  async #call<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await withTimeout(what, this.#requestTimeoutMs + 1000, work);
    } catch (err) {
      throw toQueueError(err, what);
    }
  }

  #checkOpen(what: string): void {
    if (this.#closed) throw new QueueClosedError(what);
  }
}
