/**
 * Replays dead letters: re-publishes the messages on a topic's dead-letter topic to the topic they
 * came from (`Lattice-Origin-Topic`), all of them, the oldest `limit`, or the one named by `id`, once
 * the cause that dead-lettered them is fixed (`lattice vss replay`).
 *
 * - A dead letter is acknowledged on the dead-letter topic only after its re-publish resolved, that
 *   is, once it is durable on the origin topic: a crash in between replays it again, never loses it.
 * - The re-published message keeps the original's payload, key, application headers and partition
 *   (the origin partition when the topic still has it: EOF markers go back to the partition they
 *   mark). It gets a new message id, `replay:<dead-letter topic>:<sequence>`: the original id may
 *   still be inside the origin topic's de-duplication window, which would swallow the replay, while
 *   the new one is the same every time this dead letter is replayed, so a replay retried after a
 *   crash is stored once. The original id travels in `Lattice-Original-Message-Id`, and the dead
 *   letter's position in `Lattice-Replayed-From`.
 * - Dead letters are replayed one after the other, in the order they were dead-lettered, so events
 *   of one key keep their order. A replayed event lands after whatever its key received since it was
 *   dead-lettered: replay soon after fixing the cause (real-time events carry a timestamp that keeps
 *   an old one from overwriting a newer value; embedding events do not).
 * - Replay reads the dead-letter topic as the durable group `lattice-replay`. Dead letters it looks
 *   at but leaves (other ids, past the limit, or without an origin) are handed back at the end for
 *   the next replay; a dead-letter topic allows many deliveries for that.
 */
import pino from 'pino';
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import { DeadLetterHeaders, type Queue, type QueueMessage } from '../../platform/queue/index.js';

export const REPLAY_GROUP = 'lattice-replay';

/** Headers a replayed message carries besides the original's. */
export const ReplayHeaders = {
  /** The message id the event was first published with. */
  originalMessageId: 'Lattice-Original-Message-Id',
  /** `<dead-letter topic>:<sequence>` of the dead letter it was replayed from. */
  replayedFrom: 'Lattice-Replayed-From',
} as const;

export interface ReplayOptions {
  queue: Queue;
  /** The origin topic whose dead letters are replayed (its dead-letter topic is read). */
  topic: string;
  /** Replay at most this many, oldest first. */
  limit?: number;
  /** Replay only the dead letter with this id: its own message id, or the original message's. */
  id?: string;
  /** Stop waiting for more dead letters after this long without one, ms; default 2000. */
  idleMs?: number;
  logger?: Logger;
}

export interface ReplayReport {
  topic: string;
  deadLetterTopic: string;
  /** Dead letters re-published to their origin and removed from the dead-letter topic. */
  replayed: number;
  /** Dead letters that name no usable origin: left on the dead-letter topic. */
  unreplayable: number;
  /** Dead letters still on the dead-letter topic for this group afterwards. */
  remaining: number;
}

const MAX_WINDOW = 10_000;
const REPLAYED_HEADERS = new Set<string>([
  ...Object.values(DeadLetterHeaders),
  ...Object.values(ReplayHeaders),
]);

export async function replayDeadLetters(options: ReplayOptions): Promise<ReplayReport> {
  const { queue, topic, id } = options;
  const logger = options.logger ?? pino({ level: 'silent' });
  if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 1)) {
    throw invalidArgument(`limit must be a positive integer, got ${options.limit}`, 'limit');
  }
  const config = await queue.describeTopic(topic);
  if (config.deadLetterTopic === false) {
    throw new LatticeError('FAILED_PRECONDITION', `queue topic "${topic}" has no dead-letter topic`, {
      field: 'topic',
    });
  }
  const deadLetterTopic = config.deadLetterTopic;
  const waiting = async () =>
    (await queue.groupLag(deadLetterTopic, REPLAY_GROUP)).reduce((n, p) => n + p.pending + p.unsettled, 0);
  const available = await waiting();
  const report: ReplayReport = { topic, deadLetterTopic, replayed: 0, unreplayable: 0, remaining: available };
  if (available === 0) return report;
  const wanted = id !== undefined ? 1 : Math.min(options.limit ?? available, available);

  const left: QueueMessage[] = [];
  const seen = new Set<number>();
  let failure: unknown;
  let finished = false;
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = () => {
      finished = true;
      resolve();
    };
  });
  const idleMs = options.idleMs ?? 2000;
  let idle: NodeJS.Timeout | undefined;
  let queued = 0;
  /** Ends the replay once nothing arrived for `idleMs` and nothing waits to be handled. */
  const armIdle = () => {
    clearTimeout(idle);
    if (!finished && queued === 0) idle = setTimeout(finish, idleMs);
  };
  armIdle();

  const handle = async (message: QueueMessage): Promise<void> => {
    if (finished) {
      left.push(message);
      return;
    }
    seen.add(message.sequence);
    try {
      if (id !== undefined && !matches(message, id)) {
        left.push(message);
      } else {
        const origin = originOf(message);
        if (typeof origin === 'string') {
          report.unreplayable++;
          logger.warn(
            { deadLetterTopic, sequence: message.sequence, problem: origin },
            'dead letter not replayable',
          );
          left.push(message);
        } else {
          await republish(queue, deadLetterTopic, message, origin);
          await message.ack();
          report.replayed++;
        }
      }
    } catch (err) {
      failure = err;
      left.push(message);
      finish();
      return;
    }
    if (report.replayed >= wanted || seen.size >= available) finish();
  };

  // One at a time, in delivery order: dead letters of one key are re-published in the order they
  // were dead-lettered. The window lets a scan for one id see every dead letter once, and a limited
  // replay step over a few it cannot replay.
  let chain = Promise.resolve();
  const window = Math.max(1, Math.min(id !== undefined ? available : wanted + 64, available, MAX_WINDOW));
  const consumer = await queue.subscribe(
    deadLetterTopic,
    REPLAY_GROUP,
    (message) => {
      clearTimeout(idle);
      queued++;
      chain = chain
        .then(() => handle(message))
        .finally(() => {
          queued--;
          armIdle();
        });
      return chain;
    },
    { inFlightPerPartition: window, concurrency: window, autoAck: false },
  );
  await done;
  clearTimeout(idle);
  await consumer.close();
  await chain;
  await Promise.all(
    left.map((message) =>
      message
        .nak(0)
        .catch((err: unknown) =>
          logger.warn(
            { deadLetterTopic, sequence: message.sequence, err: describeError(err) },
            'could not hand a dead letter back; it returns after the ack wait',
          ),
        ),
    ),
  );
  report.remaining = await waiting();
  if (failure !== undefined) {
    throw new LatticeError(
      'UNAVAILABLE',
      `replayed ${report.replayed} dead letter(s) of "${topic}", then failed: ${describeError(failure)}`,
      { cause: failure },
    );
  }
  return report;
}

interface Origin {
  topic: string;
  partition: number | undefined;
}

function matches(message: QueueMessage, id: string): boolean {
  return message.messageId === id || message.headers[DeadLetterHeaders.originMessageId] === id;
}

/** Where a dead letter came from, or why that cannot be told. */
function originOf(message: QueueMessage): Origin | string {
  const topic = message.headers[DeadLetterHeaders.originTopic];
  if (!topic) return `no ${DeadLetterHeaders.originTopic} header`;
  const text = message.headers[DeadLetterHeaders.originPartition];
  const partition = text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
  return { topic, partition };
}

async function republish(
  queue: Queue,
  deadLetterTopic: string,
  message: QueueMessage,
  origin: Origin,
): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (!REPLAYED_HEADERS.has(name)) headers[name] = value;
  }
  const originalId =
    message.headers[ReplayHeaders.originalMessageId] ?? message.headers[DeadLetterHeaders.originMessageId];
  if (originalId !== undefined) headers[ReplayHeaders.originalMessageId] = originalId;
  headers[ReplayHeaders.replayedFrom] = `${deadLetterTopic}:${message.sequence}`;
  const { partitions } = await queue.describeTopic(origin.topic);
  const partition =
    origin.partition !== undefined && origin.partition < partitions ? origin.partition : undefined;
  await queue.publish(origin.topic, message.payload, {
    ...(message.key === undefined ? {} : { key: message.key }),
    ...(partition === undefined ? {} : { partition }),
    messageId: `replay:${deadLetterTopic}:${message.sequence}`,
    headers,
  });
}
