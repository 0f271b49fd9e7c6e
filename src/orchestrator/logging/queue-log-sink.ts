import type { Queue, TopicOptions } from '../../platform/queue/index.js';
import type { LogSink, LogSinkWriteOptions } from './log-sink.js';

/** The topic inference logs are published on unless the settings name another. */
export const DEFAULT_LOG_TOPIC = 'orchestrator-inference-logs';

/**
 * Publishes records on a queue topic, keyed by tracking id and de-duplicated by message id. The
 * topic is created (or checked) before the first publish; a failure to do so fails that write, so
 * the logger retries and reports it instead of logging nothing silently.
 */
export class QueueLogSink implements LogSink {
  readonly description: string;
  private ready: Promise<unknown> | undefined;

  constructor(
    private readonly queue: Queue,
    readonly topic: string = DEFAULT_LOG_TOPIC,
    private readonly topicOptions: TopicOptions = {},
  ) {
    this.description = `${queue.kind} queue topic ${topic}`;
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
