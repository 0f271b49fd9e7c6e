import { type Queue, TOPIC_DEFAULTS, type TopicOptions } from '../../platform/queue/index.js';
import type { LogSink, LogSinkWriteOptions } from './log-sink.js';

/** The topic inference logs are published on unless the settings name another. */
export const DEFAULT_LOG_TOPIC = 'orchestrator-inference-logs';

/**
 * Retention of the log topic unless the settings say otherwise. Inference logs are published
 * whether or not anything consumes them, so the topic is bounded by age and bytes: on the embedded
 * queue it lives in this process's memory (and journal), and left at the queue's 7-day default it
 * grew by about 100 MB in one benchmark run. A consumer that falls more than this behind loses the
 * oldest records (counted in queue_discarded_messages_total on the embedded queue).
 */
export const DEFAULT_LOG_TOPIC_RETENTION = { retentionMs: 3_600_000, maxBytes: 64 * 1024 * 1024 } as const;

/**
 * Publishes records on a queue topic, keyed by tracking id and de-duplicated by message id. The
 * topic is created (or updated to `topicOptions`, retention included) before the first publish; a
 * failure to do so fails that write, so the logger retries and reports it instead of logging nothing
 * silently. Retention defaults to DEFAULT_LOG_TOPIC_RETENTION.
 */
export class QueueLogSink implements LogSink {
  readonly description: string;
  private ready: Promise<unknown> | undefined;

  private readonly topicOptions: TopicOptions;

  constructor(
    private readonly queue: Queue,
    readonly topic: string = DEFAULT_LOG_TOPIC,
    topicOptions: TopicOptions = {},
  ) {
    this.description = `${queue.kind} queue topic ${topic}`;
    const retentionMs = topicOptions.retentionMs ?? DEFAULT_LOG_TOPIC_RETENTION.retentionMs;
    this.topicOptions = {
      ...topicOptions,
      retentionMs,
      maxBytes: topicOptions.maxBytes ?? DEFAULT_LOG_TOPIC_RETENTION.maxBytes,
      // The de-duplication window may not outlast retention.
      dedupWindowMs: Math.min(topicOptions.dedupWindowMs ?? TOPIC_DEFAULTS.dedupWindowMs, retentionMs),
    };
  }

  /** Creates or checks the topic now (optional: the first write does it otherwise). */
  ensureTopic(): Promise<unknown> {
    this.ready ??= this.queue.ensureTopic(this.topic, this.topicOptions).catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  async write(record: Uint8Array, options: LogSinkWriteOptions): Promise<void> {
    await this.ensureTopic();
    await this.queue.publish(this.topic, record, { key: options.key, messageId: options.messageId });
  }

  async close(): Promise<void> {}
}
