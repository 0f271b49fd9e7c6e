/**
 * `POST /queue/topics/:topic/read` on `lattice up`'s ops server, registered only when its queue is
 * the embedded one: that queue lives inside the process (its journal locked), so `lattice logs
 * decode --from-queue` run beside it reads through this route instead. It takes what the command
 * would take itself (readMessages: a consumer group, at most `max` messages, until `idle_ms` with
 * none) and answers the payloads base64-encoded. With JetStream the command reads the queue
 * directly and this route does not exist.
 */
import type { FastifyInstance } from 'fastify';
import { isLatticeError } from '../platform/errors.js';
import { type Queue, readMessages, TopicNotFoundError } from '../platform/queue/index.js';

/** Most messages one read may take (a command asking for more reads again). */
export const MAX_READ_MESSAGES = 10_000;
/** Longest wait for the next message. */
export const MAX_READ_IDLE_MS = 60_000;

export const QUEUE_READ_PATH = '/queue/topics/:topic/read';

export interface QueueReadAnswer {
  messages: { sequence: number; payload_base64: string }[];
}

export function registerQueueReadRoute(app: FastifyInstance, queue: () => Promise<Queue>): void {
  app.post<{ Params: { topic: string }; Body: { group: string; max: number; idle_ms: number } }>(
    QUEUE_READ_PATH,
    {
      schema: {
        params: { type: 'object', properties: { topic: { type: 'string', minLength: 1, maxLength: 255 } } },
        body: {
          type: 'object',
          required: ['group'],
          additionalProperties: false,
          properties: {
            group: { type: 'string', minLength: 1, maxLength: 255 },
            max: { type: 'integer', minimum: 1, maximum: MAX_READ_MESSAGES, default: MAX_READ_MESSAGES },
            idle_ms: { type: 'integer', minimum: 0, maximum: MAX_READ_IDLE_MS, default: 2000 },
          },
        },
      },
    },
    async (request, reply) => {
      const { group, max, idle_ms: idleMs } = request.body;
      try {
        const read = await readMessages(await queue(), request.params.topic, { group, max, idleMs });
        const answer: QueueReadAnswer = {
          messages: read.map((m) => ({
            sequence: m.sequence,
            payload_base64: Buffer.from(m.payload).toString('base64'),
          })),
        };
        return answer;
      } catch (err) {
        if (err instanceof TopicNotFoundError) {
          return reply.status(404).send({
            error: { code: 'NOT_FOUND', message: `queue topic "${request.params.topic}" does not exist` },
          });
        }
        if (isLatticeError(err))
          return reply.status(503).send({ error: { code: err.code, message: err.message } });
        throw err;
      }
    },
  );
}
