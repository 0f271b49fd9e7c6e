/**
 * How a topic is laid out on JetStream: one stream per topic, named after it, with one subject per
 * partition (`<topic>.<partition>`), file storage, limits retention (max_age = retentionMs,
 * max_bytes = maxBytes, discarding the oldest) and the duplicate window as the de-duplication window; one durable pull consumer per (group, partition).
 * The settings JetStream has no field for (maxDeliver, ackWaitMs, dead-letter topic) travel in the
 * stream description, so any process can subscribe knowing only the topic name (stream metadata
 * would be nicer but needs server 2.10).
 */
import {
  AckPolicy,
  type ConsumerConfig,
  DeliverPolicy,
  DiscardPolicy,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import { z } from 'zod';
import { TopicConflictError } from '../errors.js';
import { TOPIC_DEFAULTS, type TopicConfig } from '../queue.js';

const DESCRIPTION_PREFIX = 'lattice-queue v1 ';
const NANOS_PER_MS = 1_000_000;

const descriptionSchema = z.object({
  maxDeliver: z.number().int().positive(),
  ackWaitMs: z.number().int().positive(),
  deadLetterTopic: z.union([z.string(), z.literal(false)]),
});

export function partitionSubject(topic: string, partition: number): string {
  return `${topic}.${partition}`;
}

/** The durable consumer of one group on one partition. */
export function durableName(group: string, partition: number): string {
  return `${group}_p${partition}`;
}

export function streamConfig(
  config: TopicConfig,
  replicas: number,
): Partial<StreamConfig> & { name: string } {
  const description = {
    maxDeliver: config.maxDeliver,
    ackWaitMs: config.ackWaitMs,
    deadLetterTopic: config.deadLetterTopic,
  };
  return {
    name: config.topic,
    description: DESCRIPTION_PREFIX + JSON.stringify(description),
    subjects: Array.from({ length: config.partitions }, (_, p) => partitionSubject(config.topic, p)),
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: config.retentionMs * NANOS_PER_MS,
    max_bytes: config.maxBytes ?? -1,
    duplicate_window: config.dedupWindowMs * NANOS_PER_MS,
    max_msg_size: config.maxMessageBytes,
    num_replicas: replicas,
  };
}

/** Reads a topic's settings back from its stream; TopicConflictError when the stream is not a topic. */
export function topicConfigFromStream(stream: StreamConfig, ceiling: number): TopicConfig {
  const topic = stream.name;
  const subjects = stream.subjects ?? [];
  const expected = subjects.map((_, p) => partitionSubject(topic, p));
  if (subjects.length === 0 || subjects.some((s, i) => s !== expected[i])) {
    throw new TopicConflictError(
      topic,
      `stream "${topic}" exists but is not a queue topic (subjects ${JSON.stringify(subjects)})`,
    );
  }
  const text = stream.description ?? '';
  let extra: z.infer<typeof descriptionSchema> = {
    maxDeliver: TOPIC_DEFAULTS.maxDeliver,
    ackWaitMs: TOPIC_DEFAULTS.ackWaitMs,
    deadLetterTopic: `${topic}-dlq`,
  };
  if (text.startsWith(DESCRIPTION_PREFIX)) {
    const parsed = descriptionSchema.safeParse(safeJson(text.slice(DESCRIPTION_PREFIX.length)));
    if (parsed.success) extra = parsed.data;
  }
  const toMs = (nanos: number | undefined, fallback: number) =>
    nanos && nanos > 0 ? Math.round(nanos / NANOS_PER_MS) : fallback;
  return {
    topic,
    partitions: subjects.length,
    maxDeliver: extra.maxDeliver,
    ackWaitMs: extra.ackWaitMs,
    deadLetterTopic: extra.deadLetterTopic,
    dedupWindowMs: toMs(stream.duplicate_window, TOPIC_DEFAULTS.dedupWindowMs),
    retentionMs: toMs(stream.max_age, TOPIC_DEFAULTS.retentionMs),
    maxBytes: stream.max_bytes !== undefined && stream.max_bytes > 0 ? stream.max_bytes : undefined,
    maxMessageBytes:
      stream.max_msg_size && stream.max_msg_size > 0 ? Math.min(stream.max_msg_size, ceiling) : ceiling,
  };
}

export function consumerConfig(
  config: TopicConfig,
  group: string,
  partition: number,
  inFlightPerPartition: number,
): Partial<ConsumerConfig> {
  return {
    durable_name: durableName(group, partition),
    description: `lattice queue group ${group}, partition ${partition}`,
    filter_subject: partitionSubject(config.topic, partition),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    replay_policy: ReplayPolicy.Instant,
    ack_wait: config.ackWaitMs * NANOS_PER_MS,
    // Unlimited on the server: the client counts attempts and dead-letters after maxDeliver, so a
    // message whose last attempt died with its consumer is still dead-lettered, not stranded.
    max_deliver: -1,
    max_ack_pending: inFlightPerPartition,
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
