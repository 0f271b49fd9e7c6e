/**
 * Crash safety, end to end: a worker process consumes 10,000 keyed messages, recording each one
 * (fdatasync'ed) before acking it, and is killed with SIGKILL mid-stream; a new worker takes over.
 * Every message must be processed at least once, the only duplicates are messages the first worker
 * had processed but not yet acked (at most one per partition: the one in flight), per-key order
 * holds within each run, and re-publishing the same message ids after the restart adds nothing.
 * Run against JetStream and against the journaled memory queue (where the killed process is the
 * one holding the queue).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createQueue, type Queue, type QueueOptions } from '../../../src/platform/queue/index.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';
import { keyForPartition, type WorkerConfig, type WorkerEvent } from './fixtures/crash-messages.js';

const MESSAGES = 10_000;
const KEYS = 100;
const PARTITIONS = 8;
const KILL_AFTER = 3000;
const ACK_WAIT_MS = 2000;
const WORKER = fileURLToPath(new URL('./fixtures/crash-worker.ts', import.meta.url));

const url = await realServer('nats');

interface Processed {
  run: number;
  messageId: string;
  key: string;
  n: number;
  partition: number;
  deliveryCount: number;
}

function readProcessed(file: string): Processed[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [run, messageId, key, n, partition, deliveryCount] = line.split(' ');
      return {
        run: Number(run),
        messageId: messageId ?? '',
        key: key ?? '',
        n: Number(n),
        partition: Number(partition),
        deliveryCount: Number(deliveryCount),
      };
    });
}

class Worker {
  readonly child: ChildProcess;
  readonly events: WorkerEvent[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(config: WorkerConfig) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (event: WorkerEvent) => this.events.push(event));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  async next<T extends WorkerEvent['type']>(
    type: T,
    timeoutMs = 30_000,
  ): Promise<Extract<WorkerEvent, { type: T }>> {
    await eventually(
      () => this.events.some((e) => e.type === type || e.type === 'error'),
      timeoutMs,
      `worker ${type}`,
    );
    const error = this.events.find((e) => e.type === 'error');
    if (error?.type === 'error') throw new Error(`worker failed: ${error.message}`);
    return this.events.find((e) => e.type === type) as Extract<WorkerEvent, { type: T }>;
  }
}

async function crashAndRecover(
  diagnostic: (message: string) => void,
  queueOptions: QueueOptions,
  dir: string,
): Promise<void> {
  const started = Date.now();
  const recordFile = join(dir, 'processed.log');
  const topic = uniqueName('crash');
  const base = {
    queue: queueOptions,
    topic,
    group: 'crash-consumers',
    partitions: PARTITIONS,
    ackWaitMs: ACK_WAIT_MS,
    recordFile,
    keys: KEYS,
  };
  const workers: Worker[] = [];
  try {
    // Run 1: publish everything, consume, and die in the middle.
    const first = new Worker({ ...base, run: 1, publish: MESSAGES });
    workers.push(first);
    await first.next('ready', 60_000);
    await eventually(() => readProcessed(recordFile).length >= KILL_AFTER, 60_000, `${KILL_AFTER} processed`);
    first.child.kill('SIGKILL');
    assert.equal((await first.exited).signal, 'SIGKILL');
    const run1 = readProcessed(recordFile);
    assert.ok(run1.length < MESSAGES, `killed after everything was processed (${run1.length})`);
    diagnostic(`run 1 processed ${run1.length} messages before SIGKILL (${Date.now() - started} ms)`);

    // Run 2: a new process takes over and finishes.
    const second = new Worker({ ...base, run: 2, publish: 0 });
    workers.push(second);
    await second.next('ready', 60_000);
    const unique = () => new Set(readProcessed(recordFile).map((p) => p.messageId)).size;
    await eventually(() => unique() === MESSAGES, 60_000, 'every message processed');

    // Re-publishing the same ids adds nothing: sentinels published afterwards, one per partition,
    // come out with no test message before them (partitions are delivered in order).
    const before = readProcessed(recordFile).length;
    second.child.send({ type: 'republish', count: MESSAGES });
    const republished = await second.next('republished', 60_000);
    assert.equal(republished.duplicates, MESSAGES, 'every re-publish was a duplicate');
    const sentinels = new Set(republished.sentinels);
    await eventually(
      () => readProcessed(recordFile).filter((p) => sentinels.has(p.messageId)).length === PARTITIONS,
      30_000,
      'the sentinels',
    );
    const after = readProcessed(recordFile);
    assert.equal(after.length, before + PARTITIONS, 're-published messages were delivered again');
    second.child.send({ type: 'stop' });
    assert.equal((await second.exited).code, 0);

    const processed = after.filter((p) => !sentinels.has(p.messageId));
    verifyAtLeastOnce(processed, run1, diagnostic);
    diagnostic(`crash and recovery took ${Date.now() - started} ms`);
  } finally {
    for (const worker of workers)
      if (worker.child.exitCode === null && !worker.child.killed) worker.child.kill();
  }

  // Nothing is left unacknowledged for the group: a new member's first deliveries are new messages.
  const queue = await createQueue(queueOptions);
  try {
    await assertDrained(queue, topic, base.group);
  } finally {
    if (queue.kind === 'jetstream') await queue.deleteTopic(topic);
    await queue.close();
  }
}

function verifyAtLeastOnce(processed: Processed[], run1: Processed[], diagnostic: (m: string) => void): void {
  const counts = new Map<string, number>();
  for (const p of processed) counts.set(p.messageId, (counts.get(p.messageId) ?? 0) + 1);
  for (let i = 0; i < MESSAGES; i++) assert.ok(counts.has(`m-${i}`), `m-${i} was never processed`);
  assert.equal(counts.size, MESSAGES);

  // Duplicates: only the message each partition had in flight when run 1 died.
  const lastOfPartition = new Map<number, string>();
  for (const p of run1) lastOfPartition.set(p.partition, p.messageId);
  const inFlight = new Set(lastOfPartition.values());
  const duplicates = [...counts].filter(([, count]) => count > 1).map(([id]) => id);
  for (const id of duplicates) {
    assert.equal(counts.get(id), 2, `${id} processed ${counts.get(id)} times`);
    assert.ok(inFlight.has(id), `${id} was processed twice but was not in flight at the kill`);
  }
  assert.ok(duplicates.length <= PARTITIONS);
  diagnostic(`${duplicates.length} duplicates, all in flight at the kill (bound: ${PARTITIONS})`);

  // Per-key order within each run, and run 2 continues where run 1 stopped.
  for (const run of [1, 2]) {
    const lastN = new Map<string, number>();
    for (const p of processed.filter((x) => x.run === run)) {
      const previous = lastN.get(p.key) ?? -1;
      assert.ok(p.n > previous, `run ${run}: ${p.key} #${p.n} after #${previous}`);
      lastN.set(p.key, p.n);
    }
  }
  const perKey = new Map<string, number[]>();
  for (const p of processed) {
    const ns = perKey.get(p.key) ?? [];
    if (ns[ns.length - 1] !== p.n) ns.push(p.n);
    perKey.set(p.key, ns);
  }
  for (const [key, ns] of perKey) {
    assert.deepEqual(
      ns,
      ns.map((_, i) => i),
      `${key} processed out of order across the restart`,
    );
  }
}

async function assertDrained(queue: Queue, topic: string, group: string): Promise<void> {
  const seen: string[] = [];
  const consumer = await queue.subscribe(topic, group, (message) => {
    seen.push(message.messageId ?? '');
  });
  const finals: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const messageId = `final-${p}`;
    finals.push(messageId);
    await queue.publish(topic, new TextEncoder().encode('{"key":"final","n":-1}'), {
      key: keyForPartition(p, PARTITIONS),
      messageId,
    });
  }
  await eventually(() => seen.length >= PARTITIONS, 10_000, 'the final messages');
  await consumer.close();
  assert.deepEqual([...seen].sort(), finals.sort(), 'a message was left unacknowledged');
}

describe('queue crash recovery (SIGKILL mid-stream)', () => {
  it('JetStream: at least once, bounded duplicates, per-key order, dedup', {
    skip: !url,
    timeout: 180_000,
  }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-crash-js-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    await crashAndRecover((m) => t.diagnostic(m), { kind: 'jetstream', servers: [url ?? ''] }, dir);
  });

  it('journaled memory queue: at least once, bounded duplicates, per-key order, dedup', {
    timeout: 180_000,
  }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-crash-mem-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    await crashAndRecover((m) => t.diagnostic(m), { kind: 'memory', journalDir: join(dir, 'journal') }, dir);
  });
});
