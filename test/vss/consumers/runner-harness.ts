/**
 * What the consumer runner and replay tests share: the queue adapters they run on, and a small
 * in-memory processor (`KeyValueProcessor`) that implements `EventBatchHandler` the way the real
 * processors do (parse validates, apply writes idempotently by key, in order) and can be told to
 * reject events, fail transiently, or stop inside `apply`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { createQueue, type Queue, type TopicOptions } from '../../../src/platform/queue/index.js';
import { ConsumerRunner, type ConsumerRunnerOptions } from '../../../src/vss/consumers/consumer-runner.js';
import {
  type EventBatchHandler,
  type EventOutcome,
  RejectedEvent,
} from '../../../src/vss/consumers/event-batch.js';
import { realServer, uniqueName } from '../../support/servers.js';

export interface QueueUnderTest {
  name: string;
  skip: boolean;
  open(): Promise<Queue>;
  /** Called once the queue closed. */
  cleanup?(): void;
}

const natsUrl = await realServer('nats');

/** The adapters every runner and replay test runs on. */
export function queuesUnderTest(): QueueUnderTest[] {
  let journalDir = '';
  return [
    { name: 'memory', skip: false, open: () => createQueue({ kind: 'memory' }) },
    {
      name: 'memory with journal',
      skip: false,
      open: () => {
        journalDir = mkdtempSync(join(tmpdir(), 'lattice-runner-'));
        return createQueue({ kind: 'memory', journalDir });
      },
      cleanup: () => rmSync(journalDir, { recursive: true, force: true }),
    },
    {
      name: 'jetstream',
      skip: natsUrl === undefined,
      open: () => createQueue({ kind: 'jetstream', servers: [natsUrl ?? ''] }),
    },
  ];
}

/** An event of the test processor: set `id` to `value`; `n` is its publish order. */
export interface KvEvent {
  id: string;
  value: number;
  n: number;
}

export class KeyValueProcessor implements EventBatchHandler<KvEvent> {
  readonly kind = 'kv';
  /** The store: id → value. */
  readonly store = new Map<string, number>();
  /** Every applied event, in apply order. */
  readonly history: KvEvent[] = [];
  /** Sizes of the successful apply calls. */
  readonly batchSizes: number[] = [];
  /** Ids apply rejects for good (an unknown model, say). */
  readonly unknown = new Set<string>();
  /** Ids whose batch throws (a transient failure that does not go away). */
  readonly failing = new Set<string>();
  /** The next this-many apply calls throw. */
  failNext = 0;
  /** apply calls made, failing ones included. */
  calls = 0;
  /** Runs first in every apply call (e.g. to hold a batch). */
  beforeApply: ((events: readonly KvEvent[]) => Promise<void>) | undefined;

  parse(payload: Uint8Array): KvEvent {
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(payload));
    } catch {
      throw new RejectedEvent('payload is not JSON');
    }
    const event = value as Partial<KvEvent>;
    if (typeof event.id !== 'string' || event.id === '') throw new RejectedEvent('id is required', 'id');
    if (typeof event.value !== 'number' || !Number.isFinite(event.value)) {
      throw new RejectedEvent('value must be a finite number', 'value');
    }
    return { id: event.id, value: event.value, n: typeof event.n === 'number' ? event.n : -1 };
  }

  async apply(events: readonly KvEvent[]): Promise<EventOutcome[]> {
    this.calls++;
    await this.beforeApply?.(events);
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('store unavailable');
    }
    const failing = events.find((e) => this.failing.has(e.id));
    if (failing) throw new Error(`store unavailable for ${failing.id}`);
    this.batchSizes.push(events.length);
    return events.map((event) => {
      if (this.unknown.has(event.id)) return `unknown id ${event.id}`;
      this.store.set(event.id, event.value);
      this.history.push(event);
      return undefined;
    });
  }

  /** The publish order numbers of `id`'s applied events, in apply order. */
  appliedOrder(id: string): number[] {
    return this.history.filter((e) => e.id === id).map((e) => e.n);
  }
}

export const encode = (event: Partial<KvEvent> | string): Uint8Array =>
  new TextEncoder().encode(typeof event === 'string' ? event : JSON.stringify(event));

/** A test topic with a short ack wait (a crashed runner's messages return within a second). */
export async function testTopic(queue: Queue, options: TopicOptions = {}): Promise<string> {
  const topic = uniqueName('vr');
  await queue.ensureTopic(topic, { partitions: 4, ackWaitMs: 1000, ...options });
  return topic;
}

export async function dropTopic(queue: Queue, topic: string): Promise<void> {
  await queue.deleteTopic(topic).catch(() => false);
  await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
}

/** Publishes `count` events over `keys` keys (key = id), numbered from `from`; returns the last value per id. */
export async function publishEvents(
  queue: Queue,
  topic: string,
  count: number,
  keys: number,
  from = 0,
): Promise<Map<string, number>> {
  const last = new Map<string, number>();
  for (let n = from; n < from + count; n++) {
    const id = `k${n % keys}`;
    await queue.publish(topic, encode({ id, value: n, n }), { key: id, messageId: `e${n}` });
    last.set(id, n);
  }
  return last;
}

export function startRunner(
  queue: Queue,
  topic: string,
  processor: KeyValueProcessor,
  overrides: Partial<ConsumerRunnerOptions<KvEvent>> = {},
): Promise<ConsumerRunner<KvEvent>> {
  return ConsumerRunner.start({
    queue,
    topic,
    group: 'vss-test',
    handler: processor,
    batchSize: 16,
    lingerMs: 5,
    retry: { attempts: 3, baseMs: 5, maxMs: 20 },
    metrics: new Metrics(),
    lagIntervalMs: 100,
    ...overrides,
  });
}
