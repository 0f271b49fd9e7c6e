/**
 * Lists the dead letters of a topic (`lattice vss dead-letters`): those `lattice vss replay` would
 * replay, each with why it was dead-lettered (the headers delivery.ts writes). It reads the
 * dead-letter topic as the replay group and hands every dead letter back at the end, as a replay
 * does with those it leaves, so listing changes nothing but their delivery counts (a dead-letter
 * topic allows many deliveries for that).
 */
import { describeError, LatticeError } from '../../platform/errors.js';
import { DeadLetterHeaders, type Queue, type QueueMessage } from '../../platform/queue/index.js';
import { REPLAY_GROUP } from './replay.js';

/** Most dead letters one listing shows (the oldest). */
export const MAX_LISTED = 10_000;
/** Characters of a payload a listing shows. */
const PAYLOAD_PREVIEW = 300;

export interface DeadLetter {
  /** `<topic>:<group>:<sequence>`: what `lattice vss replay --id` takes and the dead-lettering was logged with. */
  id: string;
  /** Position on the dead-letter topic. */
  sequence: number;
  originTopic: string | undefined;
  originPartition: number | undefined;
  originSequence: number | undefined;
  group: string | undefined;
  key: string | undefined;
  /** The original message's id, when it had one. */
  originMessageId: string | undefined;
  attempts: number | undefined;
  deadLetteredAt: string | undefined;
  reason: string;
  field: string | undefined;
  /** The payload's first characters (UTF-8 text; the whole when short). */
  payload: string;
}

export interface DeadLetterListing {
  topic: string;
  deadLetterTopic: string;
  /** Dead letters waiting for replay. */
  total: number;
  /** The oldest of them, at most `limit`. */
  deadLetters: DeadLetter[];
}

export interface ListDeadLettersOptions {
  queue: Queue;
  /** The origin topic, whose dead-letter topic is read. */
  topic: string;
  limit?: number;
  /** Stop waiting for more after this long without one, ms; default 2000. */
  idleMs?: number;
}

export async function listDeadLetters(options: ListDeadLettersOptions): Promise<DeadLetterListing> {
  const { queue, topic } = options;
  const config = await queue.describeTopic(topic);
  if (config.deadLetterTopic === false) {
    throw new LatticeError('FAILED_PRECONDITION', `queue topic "${topic}" has no dead-letter topic`, {
      field: 'topic',
    });
  }
  const deadLetterTopic = config.deadLetterTopic;
  const total = (await queue.groupLag(deadLetterTopic, REPLAY_GROUP)).reduce(
    (n, p) => n + p.pending + p.unsettled,
    0,
  );
  const wanted = Math.min(total, options.limit ?? MAX_LISTED, MAX_LISTED);
  const listing: DeadLetterListing = { topic, deadLetterTopic, total, deadLetters: [] };
  if (wanted === 0) return listing;

  const held: QueueMessage[] = [];
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const idleMs = options.idleMs ?? 2000;
  let idle = setTimeout(finish, idleMs);
  // Every one held unsettled at once (the window), so none comes round twice before the end.
  const consumer = await queue.subscribe(
    deadLetterTopic,
    REPLAY_GROUP,
    (message) => {
      held.push(message);
      clearTimeout(idle);
      if (held.length >= wanted) finish();
      else idle = setTimeout(finish, idleMs);
    },
    { inFlightPerPartition: wanted, concurrency: wanted, autoAck: false },
  );
  await done;
  clearTimeout(idle);
  await consumer.close();
  const failures = await Promise.allSettled(held.map((m) => m.nak(0)));
  const failed = failures.find((f) => f.status === 'rejected');
  if (failed) {
    // Not lost: an unsettled dead letter comes back after the ack wait.
    throw new LatticeError(
      'UNAVAILABLE',
      `listed the dead letters of "${topic}" but could not hand them all back (they return after the ack wait): ${describeError(failed.reason)}`,
    );
  }
  held.sort((a, b) => a.sequence - b.sequence);
  listing.deadLetters = held.slice(0, wanted).map(describeDeadLetter);
  return listing;
}

function describeDeadLetter(message: QueueMessage): DeadLetter {
  const h = message.headers;
  const number = (text: string | undefined) =>
    text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
  const text = Buffer.from(message.payload).toString('utf8');
  return {
    id: message.messageId ?? `${message.topic}:${message.sequence}`,
    sequence: message.sequence,
    originTopic: h[DeadLetterHeaders.originTopic],
    originPartition: number(h[DeadLetterHeaders.originPartition]),
    originSequence: number(h[DeadLetterHeaders.originSequence]),
    group: h[DeadLetterHeaders.originGroup],
    key: message.key,
    originMessageId: h[DeadLetterHeaders.originMessageId],
    attempts: number(h[DeadLetterHeaders.attempts]),
    deadLetteredAt: h[DeadLetterHeaders.deadLetteredAt],
    reason: h[DeadLetterHeaders.lastError] ?? 'unknown (no Lattice-Last-Error header)',
    field: h[DeadLetterHeaders.lastErrorField],
    payload: text.length > PAYLOAD_PREVIEW ? `${text.slice(0, PAYLOAD_PREVIEW - 1)}…` : text,
  };
}
