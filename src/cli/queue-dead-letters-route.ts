/**
 * `GET /queue/topics/:topic/dead-letters` on the ops server of a process whose queue is the embedded
 * one (its journal is locked by that process): `lattice vss dead-letters` run beside it lists the
 * topic's dead letters through here. With JetStream the command reads the queue itself.
 */
import type { FastifyInstance } from 'fastify';
import { isLatticeError } from '../platform/errors.js';
import { type Queue, TopicNotFoundError } from '../platform/queue/index.js';
import { listDeadLetters, MAX_LISTED } from '../vss/consumers/index.js';
import { registerQueuePublishRoute } from './queue-publish-route.js';
import { registerQueueReadRoute } from './queue-read-route.js';

export const QUEUE_DEAD_LETTERS_PATH = '/queue/topics/:topic/dead-letters';

export function registerQueueDeadLettersRoute(app: FastifyInstance, queue: () => Promise<Queue>): void {
  app.get<{ Params: { topic: string }; Querystring: { limit?: number } }>(
    QUEUE_DEAD_LETTERS_PATH,
    {
      schema: {
        params: { type: 'object', properties: { topic: { type: 'string', minLength: 1, maxLength: 255 } } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_LISTED } },
        },
      },
    },
    async (request, reply) => {
      const { topic } = request.params;
      try {
        return await listDeadLetters({
          queue: await queue(),
          topic,
          ...(request.query.limit === undefined ? {} : { limit: request.query.limit }),
        });
      } catch (err) {
        if (err instanceof TopicNotFoundError) {
          return reply
            .status(404)
            .send({ error: { code: 'NOT_FOUND', message: `queue topic "${topic}" does not exist` } });
        }
        if (isLatticeError(err)) {
          return reply.status(503).send({ error: { code: err.code, message: err.message } });
        }
        throw err;
      }
    },
  );
}

/**
 * The routes through which commands run beside a process reach its embedded queue (read, publish,
 * dead letters); only for the embedded queue, which no other process may open.
 */
export function registerEmbeddedQueueRoutes(app: FastifyInstance, queue: () => Promise<Queue>): void {
  registerQueueReadRoute(app, queue);
  registerQueuePublishRoute(app, queue);
  registerQueueDeadLettersRoute(app, queue);
}
