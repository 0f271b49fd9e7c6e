/**
 * `lattice vss publish realtime|embeddings FILE.jsonl` and `lattice vss dead-letters`: producing to
 * and inspecting the vss topics from the command line, on either queue. JetStream (or an embedded
 * queue no process holds) is used directly; the embedded queue of a running `lattice up` or
 * `lattice vss` through that process's ops server (queue-access.ts).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import { createLogger } from '../../platform/logging/index.js';
import { Platform } from '../../platform/platform.js';
import { TopicNotFoundError } from '../../platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import {
  checkVssEvent,
  type DeadLetterListing,
  ensureVssTopics,
  listDeadLetters,
  type VssEventKind,
  vssEventTopic,
  vssTopics,
} from '../../vss/consumers/index.js';
import type { Invocation } from '../command-kit.js';
import { opsBaseUrl } from '../ops-url.js';
import { accessQueue, callOps, type QueueAccess } from '../queue-access.js';
import { QUEUE_DEAD_LETTERS_PATH } from '../queue-dead-letters-route.js';
import {
  MAX_PUBLISH_MESSAGES,
  type PublishMessage,
  publishMessages,
  QUEUE_PUBLISH_PATH,
  type QueuePublishAnswer,
} from '../queue-publish-route.js';
import type { VssDeadLettersOptions, VssPublishOptions } from './vss.command.js';

/** Bad lines a refusal lists; the count says how many more there were. */
const SHOWN_BAD_LINES = 20;
/** Payload text per call to the ops route, well under its body limit. */
const CALL_BYTES = 4 * 1024 * 1024;

/** `lattice vss publish KIND FILE`. */
export async function runVssPublish({
  args,
  options,
  context,
}: Invocation<VssPublishOptions>): Promise<void> {
  const [kind, file] = args as [VssEventKind, string];
  const settings = loadSettings({ file: context.settingsFile });
  const topic = vssEventTopic(settings.vss.consumers, kind);
  const messages = await readEventFile(kind, file);
  await withQueue(settings, options.address, async (access) => {
    let published = 0;
    if (access.kind === 'direct') {
      // Producers may start before the consumers: the topics are created as the consumers would.
      await ensureVssTopics(access.queue, settings.vss.consumers);
      published = await publishMessages(access.queue, topic, messages);
    } else {
      for (const chunk of chunks(messages)) published += await publishThroughOps(access.base, topic, chunk);
    }
    console.log(`Published ${published} ${eventsOf(kind)} from ${file} to ${topic}.`);
  });
}

/** `lattice vss dead-letters`. */
export async function runVssDeadLetters({
  options,
  context,
}: Invocation<VssDeadLettersOptions>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  const topics = options.topic === undefined ? vssTopics(settings.vss.consumers) : [options.topic];
  const listings: DeadLetterListing[] = [];
  await withQueue(settings, options.address, async (access) => {
    for (const topic of topics) {
      try {
        listings.push(
          access.kind === 'direct'
            ? await listDeadLetters({
                queue: access.queue,
                topic,
                ...(options.limit === undefined ? {} : { limit: options.limit }),
              })
            : await deadLettersThroughOps(access.base, topic, options.limit),
        );
      } catch (err) {
        if (!(err instanceof TopicNotFoundError)) throw err;
        if (options.topic !== undefined)
          throw invalidArgument(`queue topic "${topic}" does not exist`, 'topic');
        // The vss topics exist once the consumers first started: none yet, no dead letters yet.
      }
    }
  });
  if (options.json) {
    console.log(JSON.stringify(listings, null, 2));
    return;
  }
  for (const listing of listings) printListing(listing);
  if (listings.length === 0) console.log(`No vss topics yet (${topics.join(', ')}): no dead letters.`);
}

function eventsOf(kind: VssEventKind): string {
  return kind === 'realtime' ? 'real-time events' : 'embedding events';
}

/**
 * The file's events, each checked as the consumers parse them and keyed as producers key them.
 * One bad line refuses the whole file, listing the bad lines by number: publishing the rest would
 * leave the user to find out which of them went out.
 */
async function readEventFile(kind: VssEventKind, file: string): Promise<PublishMessage[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw invalidArgument(`cannot read ${file}: ${describeError(err)}`, 'FILE');
  }
  const run = randomBytes(6).toString('hex');
  const messages: PublishMessage[] = [];
  const bad: string[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    const checked = checkVssEvent(kind, Buffer.from(line, 'utf8'));
    if (!checked.ok) bad.push(`  line ${i + 1}: ${checked.reason}`);
    // The message id makes a publish retried within this run land once (a new run is new messages).
    else messages.push({ payload: line, key: checked.key, message_id: `publish:${run}:${i + 1}` });
  });
  if (bad.length > 0) {
    const more = bad.length > SHOWN_BAD_LINES ? `\n  … and ${bad.length - SHOWN_BAD_LINES} more` : '';
    throw invalidArgument(
      `${file}: ${bad.length} of ${bad.length + messages.length} lines are not valid ${eventsOf(kind)}; nothing was published:\n${bad.slice(0, SHOWN_BAD_LINES).join('\n')}${more}`,
      'FILE',
    );
  }
  if (messages.length === 0)
    throw invalidArgument(`${file} holds no events (one JSON object per line)`, 'FILE');
  return messages;
}

/** Opens the platform's queue (or finds the process holding it), runs `work`, closes. */
async function withQueue(
  settings: LoadedSettings,
  address: string | undefined,
  work: (access: QueueAccess) => Promise<void>,
): Promise<void> {
  const platform = new Platform(settings, { logger: createLogger('lattice', { level: 'silent' }) });
  try {
    await work(await accessQueue(platform, opsBaseUrl(settings, address)));
  } finally {
    await platform.close();
  }
}

function* chunks(messages: readonly PublishMessage[]): Generator<PublishMessage[]> {
  let chunk: PublishMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    if (
      chunk.length > 0 &&
      (chunk.length >= MAX_PUBLISH_MESSAGES || bytes + message.payload.length > CALL_BYTES)
    ) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(message);
    bytes += message.payload.length;
  }
  if (chunk.length > 0) yield chunk;
}

async function publishThroughOps(base: string, topic: string, messages: PublishMessage[]): Promise<number> {
  const answer = await callOps<QueuePublishAnswer>(base, topicPath(QUEUE_PUBLISH_PATH, topic), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages }),
    signal: AbortSignal.timeout(120_000),
  });
  if (answer.status !== 200) throw opsFailure(base, `publish to ${topic}`, answer.body);
  return answer.body.published;
}

async function deadLettersThroughOps(
  base: string,
  topic: string,
  limit: number | undefined,
): Promise<DeadLetterListing> {
  const query = limit === undefined ? '' : `?limit=${limit}`;
  const answer = await callOps<DeadLetterListing>(
    base,
    `${topicPath(QUEUE_DEAD_LETTERS_PATH, topic)}${query}`,
    {
      signal: AbortSignal.timeout(120_000),
    },
  );
  if (answer.status === 404 && typeof answer.body.error === 'object') throw new TopicNotFoundError(topic);
  if (answer.status !== 200) throw opsFailure(base, `list the dead letters of ${topic}`, answer.body);
  return answer.body;
}

function topicPath(path: string, topic: string): string {
  return path.replace(':topic', encodeURIComponent(topic));
}

function opsFailure(base: string, what: string, body: { error?: unknown; message?: unknown }): LatticeError {
  const error = body.error;
  const message =
    typeof error === 'object' && error !== null && 'message' in error
      ? String(error.message)
      : String(body.message ?? error ?? 'no reason given');
  return new LatticeError('UNAVAILABLE', `the running process at ${base} could not ${what}: ${message}`);
}

function printListing(listing: DeadLetterListing): void {
  const { topic, deadLetterTopic, total, deadLetters } = listing;
  const shown = deadLetters.length < total ? ` (the oldest ${deadLetters.length} shown)` : '';
  console.log(`${topic}: ${total} dead letter(s) on ${deadLetterTopic}${shown}`);
  for (const letter of deadLetters) {
    const where = [
      letter.originPartition === undefined ? undefined : `partition ${letter.originPartition}`,
      letter.key === undefined ? undefined : `key ${letter.key}`,
      letter.attempts === undefined ? undefined : `${letter.attempts} attempt(s)`,
      letter.deadLetteredAt,
    ].filter((part) => part !== undefined);
    console.log(`  ${letter.id}  ${where.join(', ')}`);
    console.log(
      `    reason: ${letter.reason}${letter.field === undefined ? '' : ` (field ${letter.field})`}`,
    );
    console.log(`    payload: ${letter.payload}`);
  }
}
