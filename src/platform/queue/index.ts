/**
 * The queue port and its adapters. Services import from here only and pick the adapter by
 * configuration with `createQueue`; see queue.ts for the guarantees every adapter keeps.
 */
import type { Logger } from '../logging/index.js';
import { JetStreamQueue } from './jetstream/jetstream-queue.js';
import type { FsyncPolicy } from './memory/journal.js';
import { MemoryQueue, type MemoryQueueOptions } from './memory/memory-queue.js';
import type { Queue } from './queue.js';

export {
  MessageTooLargeError,
  QueueClosedError,
  TopicConflictError,
  TopicNotFoundError,
} from './errors.js';
export { JetStreamQueue, type JetStreamQueueOptions } from './jetstream/jetstream-queue.js';
export type { FsyncPolicy } from './memory/journal.js';
export { MemoryQueue, type MemoryQueueOptions } from './memory/memory-queue.js';
export { murmur2, partitionForKey } from './partition.js';
export {
  type Consumer,
  DeadLetterHeaders,
  type DiscardReason,
  deadLetterId,
  type MessageHandler,
  type PartitionLag,
  type PublishOptions,
  type PublishResult,
  type Queue,
  type QueueMessage,
  type SubscribeOptions,
  type TermDetails,
  TOPIC_DEFAULTS,
  type TopicConfig,
  type TopicOptions,
  type TopicStats,
} from './queue.js';
export { type ReadMessage, type ReadMessagesOptions, readMessages } from './read-messages.js';

export type QueueOptions =
  | {
      kind: 'memory';
      /** Journal directory; without it messages are lost when the process exits. */
      journalDir?: string;
      fsync?: FsyncPolicy;
      fsyncIntervalMs?: number;
      segmentBytes?: number;
      maxMessageBytes?: number;
      /** Told of every message retention discards before all groups settled it. */
      onDiscard?: MemoryQueueOptions['onDiscard'];
      logger?: Logger;
    }
  | {
      kind: 'jetstream';
      servers: string[];
      name?: string;
      user?: string;
      pass?: string;
      token?: string;
      connectTimeoutMs?: number;
      requestTimeoutMs?: number;
      replicas?: number;
      logger?: Logger;
    };

/**
 * Opens the configured queue: `memory` (embedded, optionally journaled) or `jetstream` (connects,
 * failing with UNAVAILABLE within `connectTimeoutMs` when no server answers).
 */
export function createQueue(options: QueueOptions): Promise<Queue> {
  if (options.kind === 'memory') {
    const { kind: _kind, ...memory } = options;
    return MemoryQueue.open(memory);
  }
  const { kind: _kind, ...jetstream } = options;
  return JetStreamQueue.connect(jetstream);
}
