/**
 * Publishing a list of messages to a queue topic, for `lattice vss publish`: straight to the queue
 * when the command can open it (JetStream), and otherwise through `POST /queue/topics/:topic/publish`
 * on the ops server of the process whose embedded queue it is (`lattice up`, `lattice vss`), which
 * runs the same publish there. The route exists only on an embedded queue, beside the read route
 * (queue-read-route.ts), on the same ops server.
 *
 * Messages go through a publish window: many in flight, those of one key one after the other in
 * list order, each with its message id, so a publish retried after a transient failure is stored
 * once.
 */
import type { FastifyInstance } from 'fastify';
import { isLatticeError } from '../platform/errors.js';
import { type Queue, TopicNotFoundError } from '../platform/queue/index.js';
import { PublishWindow } from '../vss/admin/jobs/publish-window.js';

/** Most messages one call of the route takes (the command sends more in several calls). */
export const MAX_PUBLISH_MESSAGES = 1000;
/** Largest request body the route takes; the command keeps each call's payloads well below it. */
export const MAX_PUBLISH_BODY_BYTES = 16 * 1024 * 1024;

export const QUEUE_PUBLISH_PATH = '/queue/topics/:topic/publish';

export interface PublishMessage {
  /** The message's bytes, as text (vss events are JSON). */
  payload: string;
  key: string;
  message_id: string;
}

export interface QueuePublishAnswer {
  published: number;
}

const IN_FLIGHT = 64;
const RETRY = { attempts: 5, baseMs: 200, maxMs: 2000 };

/** Publishes the messages in order (per key); resolves with how many were stored, once all are durable. */
export async function publishMessages(
  queue: Queue,
  topic: string,
  messages: readonly PublishMessage[],
): Promise<number> {
  await queue.describeTopic(topic);
  const window = new PublishWindow(queue, topic, IN_FLIGHT, RETRY);
  let published = 0;
  const refused: string[] = [];
  for (const message of messages) {
    await window.add(
      Buffer.from(message.payload, 'utf8'),
      { key: message.key, messageId: message.message_id },
      (outcome) => {
        if (outcome.stored) published++;
        else refused.push(`${message.message_id}: ${outcome.reason}`);
      },
    );
  }
  await window.drain();
  if (refused.length > 0) {
    throw new Error(`${refused.length} message(s) refused by the queue: ${refused.slice(0, 3).join('; ')}`);
  }
  return published;
}

export function registerQueuePublishRoute(app: FastifyInstance, queue: () => Promise<Queue>): void {
  app.post<{ Params: { topic: string }; Body: { messages: PublishMessage[] } }>(
    QUEUE_PUBLISH_PATH,
    {
      bodyLimit: MAX_PUBLISH_BODY_BYTES,
      schema: {
        params: { type: 'object', properties: { topic: { type: 'string', minLength: 1, maxLength: 255 } } },
        body: {
          type: 'object',
          required: ['messages'],
          additionalProperties: false,
          properties: {
            messages: {
              type: 'array',
              maxItems: MAX_PUBLISH_MESSAGES,
              items: {
                type: 'object',
                required: ['payload', 'key', 'message_id'],
                additionalProperties: false,
                properties: {
                  payload: { type: 'string' },
                  key: { type: 'string', minLength: 1 },
                  message_id: { type: 'string', minLength: 1, maxLength: 256 },
                },
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const { topic } = request.params;
      try {
        const answer: QueuePublishAnswer = {
          published: await publishMessages(await queue(), topic, request.body.messages),
        };
        return answer;
      } catch (err) {
        if (err instanceof TopicNotFoundError) {
          return reply
            .status(404)
            .send({ error: { code: 'NOT_FOUND', message: `queue topic "${topic}" does not exist` } });
        }
        const code = isLatticeError(err) ? err.code : 'UNAVAILABLE';
        const message = err instanceof Error ? err.message : String(err);
        return reply.status(503).send({ error: { code, message } });
      }
    },
  );
}
