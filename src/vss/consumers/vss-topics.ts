/**
 * The vss queue topics and how the consumer runner is set up for them, from the validated settings
 * (`vss.consumers`): the embeddings topic (embedding events and EOF markers) and the real-time
 * topic, each with its dead-letter topic `<topic>-dlq`.
 */
import type { Queue, TopicConfig, TopicOptions } from '../../platform/queue/index.js';
import type { Settings } from '../../platform/settings/index.js';
import type { RetrySettings } from './retry-backoff.js';

export type ConsumerSettings = Settings['vss']['consumers'];

/**
 * Deliveries before the queue itself dead-letters a message. The runner's own attempt bound
 * (`retryAttempts`) governs failures it sees; this one is the backstop for deliveries that never
 * finish (a process that crashes on a message), so it sits well above what restarts and hand-overs
 * of a healthy message add.
 */
const MAX_DELIVER = 20;

export function vssTopicOptions(settings: ConsumerSettings): TopicOptions {
  return { partitions: settings.partitions, maxDeliver: MAX_DELIVER, ackWaitMs: settings.ackWaitMs };
}

/** Creates both vss topics (and their dead-letter topics), or checks the existing ones. */
export async function ensureVssTopics(queue: Queue, settings: ConsumerSettings): Promise<TopicConfig[]> {
  const options = vssTopicOptions(settings);
  return Promise.all([
    queue.ensureTopic(settings.embeddingsTopic, options),
    queue.ensureTopic(settings.realtimeTopic, options),
  ]);
}

export function retrySettings(settings: ConsumerSettings): RetrySettings {
  return { attempts: settings.retryAttempts, baseMs: settings.retryBaseMs, maxMs: settings.retryMaxMs };
}

/** The topics `lattice vss replay` drains by default. */
export function vssTopics(settings: ConsumerSettings): string[] {
  return [settings.embeddingsTopic, settings.realtimeTopic];
}
