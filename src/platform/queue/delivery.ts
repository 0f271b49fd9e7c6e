/**
 * What happens to a delivered message, the same for every adapter: the handler runs, a clean return
 * acks (auto-ack), a throw naks with backoff, the last allowed attempt or `term()` dead-letters.
 * Adapters supply only the transport (how to ack / nak / settle one message on their store), so
 * the retry and dead-letter rules cannot drift between them.
 */

import { describeError } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { MessageTooLargeError } from './errors.js';
import {
  DeadLetterHeaders,
  deadLetterId,
  type MessageHandler,
  type PublishOptions,
  type PublishResult,
  type QueueMessage,
  type TermDetails,
  type TopicConfig,
} from './queue.js';
import type { CheckedSubscribe } from './validation.js';

/** How an adapter settles one delivered message on its store. */
export interface DeliveryTransport {
  ack(): Promise<void>;
  nak(delayMs: number): Promise<void>;
  /** Settles a message that was dead-lettered (or dropped): it is never delivered again. */
  finish(reason: string): Promise<void>;
  inProgress(): Promise<void>;
}

export interface DeliveryFields {
  topic: string;
  partition: number;
  sequence: number;
  key: string | undefined;
  messageId: string | undefined;
  headers: Readonly<Record<string, string>>;
  payload: Uint8Array;
  publishedAt: Date;
  deliveryCount: number;
}

export interface DeliveryContext {
  config: TopicConfig;
  group: string;
  subscribe: CheckedSubscribe;
  /** The adapter's own publish, for the dead-letter copy. */
  publish(topic: string, payload: Uint8Array, options: PublishOptions): Promise<PublishResult>;
  logger: Logger;
}

const MAX_ERROR_TEXT = 1000;
const SETTLED: Promise<void> = Promise.resolve();

/** A delivered message; implements the settle-once rules of `QueueMessage`. */
export class Delivery implements QueueMessage {
  readonly topic: string;
  readonly partition: number;
  readonly sequence: number;
  readonly key: string | undefined;
  readonly messageId: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: Uint8Array;
  readonly publishedAt: Date;
  readonly deliveryCount: number;
  readonly #transport: DeliveryTransport;
  readonly #context: DeliveryContext;
  #settled = false;

  constructor(fields: DeliveryFields, transport: DeliveryTransport, context: DeliveryContext) {
    this.topic = fields.topic;
    this.partition = fields.partition;
    this.sequence = fields.sequence;
    this.key = fields.key;
    this.messageId = fields.messageId;
    this.headers = fields.headers;
    this.payload = fields.payload;
    this.publishedAt = fields.publishedAt;
    this.deliveryCount = fields.deliveryCount;
    this.#transport = transport;
    this.#context = context;
  }

  get settled(): boolean {
    return this.#settled;
  }

  // Not async: an acknowledgement is made for every message, and the transport's promise is the answer.
  ack(): Promise<void> {
    if (this.#settled) return SETTLED;
    this.#settled = true;
    return this.#transport.ack();
  }

  async nak(delayMs = 0): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.#transport.nak(Math.max(0, Math.floor(delayMs)));
  }

  async term(reason = 'terminated by the handler', details: TermDetails = {}): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.deadLetter(reason, details.field);
  }

  async inProgress(): Promise<void> {
    if (!this.#settled) await this.#transport.inProgress();
  }

  /**
   * Publishes the message to the dead-letter topic, then settles it. When the dead-letter publish
   * fails the message is nak'd with backoff instead, so it is retried rather than lost.
   */
  async deadLetter(reason: string, field?: string): Promise<void> {
    this.#settled = true;
    const { config, group, logger } = this.#context;
    const lastError = oneLine(reason);
    if (config.deadLetterTopic === false) {
      logger.warn(
        { topic: this.topic, group, partition: this.partition, sequence: this.sequence, lastError },
        'queue message dropped after its last attempt (the topic has no dead-letter topic)',
      );
      await this.#transport.finish(lastError);
      return;
    }
    const headers: Record<string, string> = {
      ...this.headers,
      [DeadLetterHeaders.originTopic]: this.topic,
      [DeadLetterHeaders.originPartition]: String(this.partition),
      [DeadLetterHeaders.originSequence]: String(this.sequence),
      [DeadLetterHeaders.originGroup]: group,
      [DeadLetterHeaders.attempts]: String(this.deliveryCount),
      [DeadLetterHeaders.lastError]: lastError,
      [DeadLetterHeaders.deadLetteredAt]: new Date().toISOString(),
    };
    if (this.messageId !== undefined) headers[DeadLetterHeaders.originMessageId] = this.messageId;
    if (field !== undefined) headers[DeadLetterHeaders.lastErrorField] = oneLine(field);
    // A message dead-lettered before (and replayed since) must not keep its earlier error's field.
    else delete headers[DeadLetterHeaders.lastErrorField];
    const id = deadLetterId(this.topic, group, this.sequence);
    let stored: PublishResult;
    try {
      stored = await this.#context.publish(config.deadLetterTopic, this.payload, {
        ...(this.key === undefined ? {} : { key: this.key }),
        // One dead letter per (topic, group, message), even if settling below is lost in a crash.
        messageId: id,
        headers,
      });
    } catch (err) {
      if (err instanceof MessageTooLargeError) {
        // Retrying cannot help: the message plus the dead-letter headers will never fit.
        logger.error(
          { topic: this.topic, group, sequence: this.sequence, lastError, err: describeError(err) },
          'queue message dropped: too large for its dead-letter topic',
        );
        await this.#transport.finish(lastError);
        return;
      }
      logger.error(
        { topic: this.topic, group, sequence: this.sequence, err: describeError(err) },
        'could not publish to the dead-letter topic; the message will be retried',
      );
      await this.#transport.nak(backoffFor(this.#context.subscribe.retryBackoffMs, this.deliveryCount));
      return;
    }
    // Logged once per dead letter, with the id operators name it by (`lattice vss dead-letters`,
    // `lattice vss replay --id`): a duplicate is a dead letter already stored, and logged, before.
    if (!stored.duplicate) {
      logger.warn(
        {
          deadLetterId: id,
          topic: this.topic,
          group,
          partition: this.partition,
          sequence: this.sequence,
          key: this.key,
          attempts: this.deliveryCount,
          lastError,
          ...(field === undefined ? {} : { field: oneLine(field) }),
          deadLetterTopic: config.deadLetterTopic,
        },
        'queue message dead-lettered',
      );
    }
    await this.#transport.finish(lastError);
  }
}

/** The delay before redelivery after attempt `attempt` (1-based) failed. */
export function backoffFor(schedule: readonly number[], attempt: number): number {
  return schedule[Math.min(attempt, schedule.length) - 1] ?? 0;
}

/**
 * Runs the handler for one delivery and settles it by the rules above. Never rejects: transport
 * failures are logged and left to redelivery.
 */
export async function runHandler(
  delivery: Delivery,
  handler: MessageHandler,
  context: DeliveryContext,
): Promise<void> {
  const { config, subscribe, logger } = context;
  try {
    if (delivery.deliveryCount > config.maxDeliver) {
      await delivery.deadLetter(
        `not settled in ${config.maxDeliver} deliveries (the last one was nak'd, or not settled within ` +
          `${config.ackWaitMs} ms, e.g. because its consumer stopped)`,
      );
      return;
    }
    try {
      // A handler that returns nothing (a synchronous one) is not awaited: no turn of the loop per message.
      const running = handler(delivery);
      if (running !== undefined) await running;
    } catch (err) {
      if (delivery.settled) {
        logger.warn({ topic: delivery.topic, err: describeError(err) }, 'queue handler threw after settling');
        return;
      }
      if (delivery.deliveryCount >= config.maxDeliver) await delivery.deadLetter(describeError(err));
      else await delivery.nak(backoffFor(subscribe.retryBackoffMs, delivery.deliveryCount));
      return;
    }
    if (!delivery.settled && subscribe.autoAck) await delivery.ack();
  } catch (err) {
    logger.error(
      { topic: delivery.topic, group: context.group, sequence: delivery.sequence, err: describeError(err) },
      'could not settle a queue message; it will be redelivered',
    );
  }
}

function oneLine(text: string): string {
  const flat = text.replace(/[\r\n]+/g, ' ').trim() || 'unknown error';
  return flat.length > MAX_ERROR_TEXT ? `${flat.slice(0, MAX_ERROR_TEXT - 1)}…` : flat;
}
