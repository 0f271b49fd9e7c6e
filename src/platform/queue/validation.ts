/**
 * Boundary checks shared by the adapters: names, topic settings, publish and subscribe options.
 * Everything that enters the queue passes here once, so the adapters work with trusted values and
 * reject the same inputs with the same INVALID_ARGUMENT errors.
 */
import { z } from 'zod';
import { invalidArgument } from '../errors.js';
import { MessageTooLargeError } from './errors.js';
import {
  type PublishOptions,
  type SubscribeOptions,
  TOPIC_DEFAULTS,
  type TopicConfig,
  type TopicOptions,
} from './queue.js';

/** Topic and group names: also JetStream stream / consumer names and NATS subject tokens. */
const NAME = /^[A-Za-z0-9_-]+$/;
const MAX_TOPIC_LENGTH = 200;
const MAX_GROUP_LENGTH = 120;
const MAX_MESSAGE_ID_LENGTH = 256;
const MAX_DELIVER = 1000;
const HEADER_NAME = /^[A-Za-z0-9_-]+$/;

/** Header carrying the message key on the wire and in the journal. */
export const KEY_HEADER = 'Lattice-Key';
/** Header carrying the de-duplication id (JetStream's own name for it). */
export const MESSAGE_ID_HEADER = 'Nats-Msg-Id';

export const DEFAULT_RETRY_BACKOFF_MS: readonly number[] = [500, 2000, 10_000, 30_000];

export function checkTopicName(topic: unknown, field = 'topic'): string {
  if (typeof topic !== 'string' || !NAME.test(topic) || topic.length > MAX_TOPIC_LENGTH) {
    throw invalidArgument(
      `${field} must be 1-${MAX_TOPIC_LENGTH} characters of letters, digits, "_" and "-"; got ${JSON.stringify(topic)}`,
      field,
    );
  }
  return topic;
}

export function checkGroupName(group: unknown): string {
  if (typeof group !== 'string' || !NAME.test(group) || group.length > MAX_GROUP_LENGTH) {
    throw invalidArgument(
      `group must be 1-${MAX_GROUP_LENGTH} characters of letters, digits, "_" and "-"; got ${JSON.stringify(group)}`,
      'group',
    );
  }
  return group;
}

const positiveInt = z.number().int().positive();

const topicOptionsSchema = z
  .object({
    partitions: positiveInt.max(1024).optional(),
    maxDeliver: positiveInt.max(MAX_DELIVER).optional(),
    ackWaitMs: positiveInt.min(10).optional(),
    deadLetterTopic: z.union([z.string(), z.literal(false)]).optional(),
    dedupWindowMs: positiveInt.optional(),
    retentionMs: positiveInt.optional(),
    maxBytes: positiveInt.min(1024).optional(),
    maxMessageBytes: positiveInt.optional(),
  })
  .strict();

/** Validates `options` and fills in the defaults; `ceiling` is the adapter's largest message. */
export function resolveTopicConfig(topic: string, options: TopicOptions, ceiling: number): TopicConfig {
  checkTopicName(topic);
  const parsed = topicOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw fromZod(parsed.error, 'topic options');
  const o = parsed.data;
  const deadLetterTopic = o.deadLetterTopic === undefined ? `${topic}-dlq` : o.deadLetterTopic;
  if (deadLetterTopic !== false) {
    checkTopicName(deadLetterTopic, 'deadLetterTopic');
    if (deadLetterTopic === topic)
      throw invalidArgument('a topic cannot be its own dead-letter topic', 'deadLetterTopic');
  }
  // A topic bounded by bytes must hold at least one message of the largest size it accepts.
  const maxMessageBytes = o.maxMessageBytes ?? Math.min(ceiling, o.maxBytes ?? ceiling);
  if (o.maxBytes !== undefined && maxMessageBytes > o.maxBytes) {
    throw invalidArgument(
      `maxMessageBytes ${maxMessageBytes} of topic "${topic}" exceeds its maxBytes ${o.maxBytes}`,
      'maxMessageBytes',
    );
  }
  if (maxMessageBytes > ceiling) {
    throw invalidArgument(
      `maxMessageBytes ${maxMessageBytes} of topic "${topic}" exceeds this queue's limit of ${ceiling} bytes`,
      'maxMessageBytes',
    );
  }
  const dedupWindowMs = o.dedupWindowMs ?? TOPIC_DEFAULTS.dedupWindowMs;
  const retentionMs = o.retentionMs ?? TOPIC_DEFAULTS.retentionMs;
  if (dedupWindowMs > retentionMs) {
    throw invalidArgument(
      `dedupWindowMs (${dedupWindowMs}) may not exceed retentionMs (${retentionMs})`,
      'dedupWindowMs',
    );
  }
  return {
    topic,
    partitions: o.partitions ?? TOPIC_DEFAULTS.partitions,
    maxDeliver: o.maxDeliver ?? TOPIC_DEFAULTS.maxDeliver,
    ackWaitMs: o.ackWaitMs ?? TOPIC_DEFAULTS.ackWaitMs,
    deadLetterTopic,
    dedupWindowMs,
    retentionMs,
    maxBytes: o.maxBytes,
    maxMessageBytes,
  };
}

/**
 * The settings of a topic's dead-letter topic: one partition, no dead letter of its own, and the
 * most deliveries allowed: with nowhere further to go, a message past them would be dropped, and its
 * readers (an operator's replay looking for one id) legitimately see a message many times.
 */
export function deadLetterTopicOptions(config: TopicConfig): TopicOptions {
  return {
    partitions: 1,
    maxDeliver: MAX_DELIVER,
    deadLetterTopic: false,
    dedupWindowMs: config.dedupWindowMs,
    retentionMs: config.retentionMs,
    ...(config.maxBytes === undefined ? {} : { maxBytes: config.maxBytes }),
  };
}

const publishOptionsSchema = z
  .object({
    key: z.string().min(1).max(1024).optional(),
    partition: z.number().int().nonnegative().optional(),
    messageId: z.string().min(1).max(MAX_MESSAGE_ID_LENGTH).optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

export interface CheckedPublish {
  key: string | undefined;
  /** The partition asked for; checked against the topic by {@link checkPartitionOf}. */
  partition: number | undefined;
  messageId: string | undefined;
  /** Application headers (without the key and id headers). */
  headers: Record<string, string>;
}

export function checkPublishOptions(options: PublishOptions | undefined): CheckedPublish {
  const parsed = publishOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw fromZod(parsed.error, 'publish options');
  const { key, messageId, partition } = parsed.data;
  const headers = parsed.data.headers ?? {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name))
      throw invalidArgument(`header name ${JSON.stringify(name)} is not a token`, 'headers');
    if (/^nats-/i.test(name) || name.toLowerCase() === KEY_HEADER.toLowerCase()) {
      throw invalidArgument(`header name "${name}" is reserved by the queue`, 'headers');
    }
    if (/[\r\n]/.test(value)) throw invalidArgument(`header "${name}" must be a single line`, 'headers');
  }
  if (messageId !== undefined && /[\r\n]/.test(messageId)) {
    throw invalidArgument('messageId must be a single line', 'messageId');
  }
  if (key !== undefined && /[\r\n]/.test(key)) throw invalidArgument('key must be a single line', 'key');
  return { key, partition, messageId, headers };
}

/** INVALID_ARGUMENT when a publish asks for a partition the topic does not have. */
export function checkPartitionOf(config: TopicConfig, partition: number | undefined): void {
  if (partition !== undefined && partition >= config.partitions) {
    throw invalidArgument(
      `partition ${partition} does not exist on topic "${config.topic}" (partitions 0-${config.partitions - 1})`,
      'partition',
    );
  }
}

/** The headers as stored with the message: application headers plus key and id. */
export function storedHeaders(
  message: Pick<CheckedPublish, 'key' | 'messageId' | 'headers'>,
): Record<string, string> {
  const all: Record<string, string> = { ...message.headers };
  if (message.key !== undefined) all[KEY_HEADER] = message.key;
  if (message.messageId !== undefined) all[MESSAGE_ID_HEADER] = message.messageId;
  return all;
}

const utf8 = new TextEncoder();

/** Bytes of `headers` in NATS wire form ("NATS/1.0\r\n", "Name: value\r\n" each, "\r\n"). */
export function headerBytes(headers: Readonly<Record<string, string>>): number {
  const entries = Object.entries(headers);
  if (entries.length === 0) return 0;
  let size = 12;
  for (const [name, value] of entries) size += utf8.encode(name).length + utf8.encode(value).length + 4;
  return size;
}

/** A stored message's size toward `maxBytes`: payload plus headers (key and id included). */
export function storedBytes(message: {
  key?: string | undefined;
  messageId?: string | undefined;
  headers: Readonly<Record<string, string>>;
  payload: Uint8Array;
}): number {
  const { key, messageId, headers } = message;
  return message.payload.byteLength + headerBytes(storedHeaders({ key, messageId, headers: { ...headers } }));
}

/** Throws MessageTooLargeError when payload plus headers exceed the topic's limit. */
export function checkMessageSize(
  config: TopicConfig,
  payload: Uint8Array,
  headers: Readonly<Record<string, string>>,
): void {
  if (!(payload instanceof Uint8Array)) throw invalidArgument('payload must be a Uint8Array', 'payload');
  const hdr = headerBytes(headers);
  if (payload.byteLength + hdr > config.maxMessageBytes) {
    throw new MessageTooLargeError(config.topic, payload.byteLength, hdr, config.maxMessageBytes);
  }
}

const subscribeOptionsSchema = z
  .object({
    partitions: z.array(z.number().int().nonnegative()).min(1).optional(),
    concurrency: positiveInt.max(10_000).optional(),
    inFlightPerPartition: positiveInt.max(10_000).optional(),
    autoAck: z.boolean().optional(),
    retryBackoffMs: z.array(z.number().int().nonnegative()).min(1).optional(),
  })
  .strict();

export interface CheckedSubscribe {
  partitions: number[];
  concurrency: number;
  inFlightPerPartition: number;
  autoAck: boolean;
  retryBackoffMs: readonly number[];
}

export function checkSubscribeOptions(
  config: TopicConfig,
  options: SubscribeOptions | undefined,
): CheckedSubscribe {
  const parsed = subscribeOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw fromZod(parsed.error, 'subscribe options');
  const o = parsed.data;
  const all = Array.from({ length: config.partitions }, (_, p) => p);
  const partitions = o.partitions ? [...new Set(o.partitions)].sort((a, b) => a - b) : all;
  const outside = partitions.find((p) => p >= config.partitions);
  if (outside !== undefined) {
    throw invalidArgument(
      `partition ${outside} does not exist on topic "${config.topic}" (partitions 0-${config.partitions - 1})`,
      'partitions',
    );
  }
  return {
    partitions,
    concurrency: o.concurrency ?? partitions.length,
    inFlightPerPartition: o.inFlightPerPartition ?? 1,
    autoAck: o.autoAck ?? true,
    retryBackoffMs: o.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS,
  };
}

function fromZod(error: z.ZodError, what: string) {
  const issue = error.issues[0];
  const field = issue?.path.map(String).join('.') || undefined;
  return invalidArgument(
    `invalid ${what}: ${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}`,
    field,
  );
}

const memoryOptionsSchema = z.object({
  journalDir: z.string().min(1).optional(),
  fsync: z.enum(['always', 'interval', 'never']).optional(),
  fsyncIntervalMs: positiveInt.optional(),
  segmentBytes: positiveInt.min(1024).optional(),
  maxMessageBytes: positiveInt.optional(),
});

const jetStreamOptionsSchema = z.object({
  servers: z.array(z.string().min(1)).min(1),
  name: z.string().optional(),
  user: z.string().optional(),
  pass: z.string().optional(),
  token: z.string().optional(),
  connectTimeoutMs: positiveInt.optional(),
  requestTimeoutMs: positiveInt.optional(),
  replicas: positiveInt.max(5).optional(),
});

/** Checks the memory queue's settings (the logger is not checked). */
export function checkMemoryOptions(options: unknown): void {
  const parsed = memoryOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw fromZod(parsed.error, 'memory queue options');
}

/** Checks the JetStream queue's settings (the logger is not checked). */
export function checkJetStreamOptions(options: unknown): void {
  const parsed = jetStreamOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw fromZod(parsed.error, 'JetStream queue options');
}
