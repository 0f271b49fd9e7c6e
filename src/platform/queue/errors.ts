/**
 * Typed queue errors: each is a LatticeError (so transports map its `code`), and a caller that
 * needs to react to one case branches on the class, the way nats.js callers branch on
 * `StreamNotFoundError`. Connection and server failures are plain LatticeErrors with code
 * UNAVAILABLE or DEADLINE_EXCEEDED.
 */
import { LatticeError } from '../errors.js';

/** The topic was never created with `ensureTopic` (or was deleted). */
export class TopicNotFoundError extends LatticeError {
  readonly topic: string;

  constructor(topic: string) {
    super('NOT_FOUND', `queue topic "${topic}" does not exist; create it with ensureTopic first`, {
      field: 'topic',
    });
    this.name = 'TopicNotFoundError';
    this.topic = topic;
  }
}

/** A message (payload plus headers) is larger than the topic accepts. */
export class MessageTooLargeError extends LatticeError {
  readonly topic: string;
  readonly size: number;
  readonly limit: number;

  constructor(topic: string, payloadBytes: number, headerBytes: number, limit: number) {
    const size = payloadBytes + headerBytes;
    super(
      'RESOURCE_EXHAUSTED',
      `message of ${size} bytes (payload ${payloadBytes} + headers ${headerBytes}) exceeds the ` +
        `${limit}-byte limit of queue topic "${topic}"`,
      { field: 'payload' },
    );
    this.name = 'MessageTooLargeError';
    this.topic = topic;
    this.size = size;
    this.limit = limit;
  }
}

/**
 * `ensureTopic` asked for a setting that cannot change on an existing topic (the partition count:
 * changing it would move keys to other partitions), or the server holds something else under the name.
 */
export class TopicConflictError extends LatticeError {
  readonly topic: string;

  constructor(topic: string, message: string, field?: string) {
    super('FAILED_PRECONDITION', `queue topic "${topic}": ${message}`, { field });
    this.name = 'TopicConflictError';
    this.topic = topic;
  }
}

/** The queue (or the consumer) was closed; nothing more can be published or consumed through it. */
export class QueueClosedError extends LatticeError {
  constructor(what: string) {
    super('FAILED_PRECONDITION', `${what}: the queue is closed`);
    this.name = 'QueueClosedError';
  }
}
