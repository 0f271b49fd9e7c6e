/**
 * Waiting on admin operations from the CLI: `--wait` polls GET /operations/{id} with a progress
 * display (a redrawn bar on a terminal, plain lines elsewhere) to SUCCEEDED (exit 0) or FAILED
 * (exit 1 with the operation's last error); Ctrl-C stops the wait only (exit 130, with how to watch
 * again); `status` and `retry`. Against the real admin API in this process (vss-admin-stack.ts),
 * whose resets really ingest JSON Lines training data, index and flip; with the consumers stopped a
 * reset stays RUNNING at `ingesting`, which is how a test holds one unfinished. How a given answer
 * is drawn (bar widths, the plain-line interval) is checked on the renderer with a fake clock below.
 */
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AdminClient, AdminUnreachableError } from '../../../src/cli/vss-admin/admin-client.js';
import { bareOperation } from '../../../src/cli/vss-admin/operation-view.js';
import { ProgressRenderer } from '../../../src/cli/vss-admin/progress.js';
import { watchOperation } from '../../../src/cli/vss-admin/watch-operation.js';
import { RESET_STEPS } from '../../../src/vss/admin/operations/index.js';
import type { Operation } from '../../../src/vss/store/index.js';
import {
  type Catalog,
  registerCatalog,
  waitForOperation,
  writeTrainingData,
} from '../../support/admin-engine-world.js';
import { closedPort } from '../../support/closed-port.js';
import { eventually } from '../../support/servers.js';
import { inProcessVssAdmin, type VssAdminStack } from '../../support/vss-admin-stack.js';
import { CapturedStream, runCli } from './cli-harness.js';

let api: VssAdminStack;

before(async () => {
  api = await inProcessVssAdmin();
});
after(() => api?.close());

/** A reset's steps in order (src/vss/admin/operations/steps/reset-model.ts), after PENDING. */
const RESET_PHASES = ['PENDING', ...RESET_STEPS];
const ROWS = 300;
let catalogs = 0;

/**
 * A catalog of its own (variants `all` and `live`) whose training data holds ROWS good rows and two
 * the job counts as bad; `withData: false` names a directory that does not exist, so its reset fails.
 */
async function catalog(withData = true): Promise<{ catalog: Catalog; data: string; args: string[] }> {
  const data = join(api.trainingDir, `ops-${++catalogs}`);
  if (withData) {
    writeTrainingData(data, ROWS);
    appendFileSync(join(data, 'part-0.jsonl'), '{"id":"short","emb":[1,2]}\nnot json\n');
  }
  const registered = await registerCatalog(api.store, data);
  return {
    catalog: registered,
    data,
    args: ['--entity', registered.entity, '--model', registered.modelName],
  };
}

/** The newest operation of the catalog's model, as the store holds it. */
async function lastOperation(c: Catalog): Promise<Operation> {
  const [newest] = await api.store.operations.list({ entity: c.entity, modelName: c.modelName, limit: 1 });
  assert.ok(newest, `no operation of ${c.entity}/${c.modelName}`);
  return newest;
}

/** The phase (status or step) and percent of each plain progress line of operation `id`. */
function progressLines(lines: readonly string[], id: string): { phase: string; percent: number }[] {
  return lines.map((line) => {
    const match = new RegExp(`^operation ${id}: (\\d+)% {2}(\\S+)`).exec(line);
    assert.ok(match, `not a progress line of ${id}: ${line}`);
    return { phase: match[2]!, percent: Number(match[1]) };
  });
}

/** Progress only moves forward, through the reset's phases in their order. */
function assertResetProgress(shown: readonly { phase: string; percent: number }[]): void {
  assert.ok(shown.length >= 2, JSON.stringify(shown));
  for (let i = 1; i < shown.length; i++) {
    const [before, now] = [shown[i - 1]!, shown[i]!];
    assert.ok(now.percent >= before.percent, `progress went back: ${JSON.stringify(shown)}`);
    assert.ok(
      RESET_PHASES.indexOf(now.phase) >= RESET_PHASES.indexOf(before.phase),
      `phases out of order: ${JSON.stringify(shown)}`,
    );
  }
  for (const { phase } of shown) assert.ok(RESET_PHASES.includes(phase), phase);
}

describe('--wait', () => {
  test('reset waits by default: plain progress lines when stdout is not a terminal, exit 0 on SUCCEEDED', async () => {
    const { catalog: c, data, args } = await catalog();
    const result = await runCli('reset', args, { url: api.url });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const operation = await lastOperation(c);
    const id = operation.operationId;
    assert.equal(operation.status, 'SUCCEEDED');
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(
      lines[0],
      `Reset accepted: operation ${id}; version 1, variants all → 1, live → 1, mq_id 1, training data ${data}`,
    );
    assert.equal(lines.at(-1), `operation ${id} (RESET_MODEL) SUCCEEDED`);
    assert.equal(
      lines.at(-2),
      `operation ${id}: 100%  drop_previous  (SUCCEEDED)  ${ROWS} rows published  2 bad rows`,
    );
    // In between, a line per phase (more only when the 5 s interval passes while progress moves).
    assertResetProgress(progressLines(lines.slice(1, -2), id));
  });

  test('on a terminal: one bar redrawn in place, then the outcome on its own line', async () => {
    const { catalog: c, args } = await catalog();
    const result = await runCli('reset', args, { url: api.url, tty: true });
    assert.equal(result.code, 0, result.stderr);
    const id = (await lastOperation(c)).operationId;
    const [accepted, bar, outcome, ...rest] = result.stdout.split('\n');
    assert.match(accepted!, new RegExp(`^Reset accepted: operation ${id}; version 1`));
    assert.deepEqual(rest, ['']);
    const frames = bar!.split('\r');
    assert.equal(frames.shift(), '', 'the bar starts at the line start');
    assert.ok(frames.length >= 2, `${frames.length} frames`);
    for (const frame of frames) {
      assert.ok(frame.endsWith('\x1b[K'), JSON.stringify(frame));
      assert.match(frame, /^\[[█░]{24}\] {1,3}\d+% {2}\S+/);
    }
    assert.equal(
      frames.at(-1),
      `[${'█'.repeat(24)}] 100%  drop_previous  (SUCCEEDED)  ${ROWS} rows published  2 bad rows\x1b[K`,
    );
    assert.equal(outcome, `operation ${id} (RESET_MODEL) SUCCEEDED`);
  });

  test('a FAILED operation: exit 1 with its last error and how to retry it', async () => {
    const { catalog: c, data, args } = await catalog(false);
    const result = await runCli('reset', args, { url: api.url });
    assert.equal(result.code, 1);
    const operation = await lastOperation(c);
    const id = operation.operationId;
    assert.equal(operation.status, 'FAILED');
    assert.match(operation.lastError ?? '', new RegExp(`training_data_path ${data} does not exist`));
    assert.equal(
      result.stderr,
      `lattice: operation ${id} (RESET_MODEL) FAILED at start_job: ${operation.lastError}\n` +
        `Retry it from the failed step with: lattice vss retry ${id}\n`,
    );
    assert.match(result.stdout, new RegExp(`\noperation ${id}: \\d+% {2}start_job {2}\\(FAILED\\).*\n$`));
  });

  test('retry resumes a failed operation and waits for it; its Idempotency-Key replays the answer', async () => {
    const { catalog: c, data, args } = await catalog(false);
    await runCli('reset', [...args, '--no-wait'], { url: api.url });
    const id = (await lastOperation(c)).operationId;
    const failed = await runCli('status', [id, '--wait'], { url: api.url });
    assert.equal(failed.code, 1);
    // The data arrives; the retry resumes the reset at the step it failed in.
    writeTrainingData(data, ROWS);
    const retried = await runCli('retry', [id, '--idempotency-key', 'retry-1'], { url: api.url });
    assert.equal(retried.code, 0, retried.stderr);
    assert.match(retried.stdout, new RegExp(`^Retry accepted: operation ${id} RUNNING\n`));
    assert.match(retried.stdout, new RegExp(`\noperation ${id} \\(RESET_MODEL\\) SUCCEEDED\n$`));
    const done = await api.store.operations.get(id);
    assert.equal(done.status, 'SUCCEEDED');
    assert.equal(done.attempts, 2);
    // The same key again: the API replays its first answer (so the key was sent), nothing runs again.
    const replayed = await runCli('retry', [id, '--idempotency-key', 'retry-1', '--no-wait'], {
      url: api.url,
    });
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, new RegExp(`^Retry accepted: operation ${id} RUNNING\n`));
    assert.equal((await api.store.operations.get(id)).attempts, 2);
    const again = await runCli('retry', [id], { url: api.url });
    assert.equal(again.code, 1);
    assert.equal(
      again.stderr,
      `lattice: operation ${id} is SUCCEEDED: only a FAILED operation can be retried (FAILED_PRECONDITION, field operation_id)\n`,
    );
  });

  test('--no-wait returns once accepted, with how to watch it', async () => {
    const { catalog: c, args } = await catalog(false);
    const result = await runCli('reset', [...args, '--no-wait'], { url: api.url });
    assert.equal(result.code, 0, result.stderr);
    const id = (await lastOperation(c)).operationId;
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 2, result.stdout);
    assert.match(lines[0]!, new RegExp(`^Reset accepted: operation ${id}; version 1`));
    assert.equal(lines[1], `Watch it with: lattice vss status ${id} --wait`);
  });

  test('a repeated Idempotency-Key: the operation recorded earlier, nothing new started', async () => {
    const { catalog: c, args } = await catalog(false);
    const first = await runCli('reset', [...args, '--idempotency-key', 'k-1', '--no-wait'], { url: api.url });
    assert.equal(first.code, 0, first.stderr);
    const id = (await lastOperation(c)).operationId;
    const again = await runCli('reset', [...args, '--idempotency-key', 'k-1', '--no-wait'], { url: api.url });
    assert.equal(again.code, 0, again.stderr);
    assert.ok(again.stdout.includes(`operation ${id}; version 1`), again.stdout);
    assert.equal((await api.store.operations.list({ entity: c.entity, modelName: c.modelName })).length, 1);
  });

  // The notice follows the API's idempotency-replayed header, not the answer's `created`, which
  // describes the operation: a replay repeats created: true, and every retry answers created: false.
  test('the "Recorded earlier" notice follows whether this Idempotency-Key was seen before', async () => {
    const { args } = await catalog(false);
    await runCli('reset', [...args, '--idempotency-key', 'k-2', '--no-wait'], { url: api.url });
    const again = await runCli('reset', [...args, '--idempotency-key', 'k-2', '--no-wait'], {
      url: api.url,
    });
    assert.match(
      again.stdout,
      /\n\(Recorded earlier under this Idempotency-Key: nothing new was started\.\)\n/,
    );
    const { catalog: failing, args: failingArgs } = await catalog(false);
    await runCli('reset', [...failingArgs, '--no-wait'], { url: api.url });
    const id = (await lastOperation(failing)).operationId;
    await waitForOperation(api.store, id, ['FAILED']);
    const retried = await runCli('retry', [id, '--idempotency-key', 'first-retry', '--no-wait'], {
      url: api.url,
    });
    assert.doesNotMatch(retried.stdout, /Recorded earlier/);
  });

  test('--json with the wait: stdout holds the final operation only, the progress goes to stderr', async () => {
    const { catalog: c, data, args } = await catalog();
    const result = await runCli('reset', [...args, '--json'], { url: api.url });
    assert.equal(result.code, 0, result.stderr);
    const final = JSON.parse(result.stdout) as Record<string, unknown>;
    const id = (await lastOperation(c)).operationId;
    assert.equal(final.status, 'SUCCEEDED');
    assert.equal(final.operation_id, id);
    const progress = result.stderr.trimEnd().split('\n');
    assertResetProgress(progressLines(progress, id));
    assert.match(progress.at(-1)!, /: 100% {2}drop_previous {2}\(SUCCEEDED\)/);
    const accepted = await runCli('reset', [...args, '--json', '--no-wait'], { url: api.url });
    assert.equal(accepted.code, 0, accepted.stderr);
    const answer = JSON.parse(accepted.stdout) as Record<string, unknown>;
    assert.deepEqual(answer.variant_version_map, { all: 2, live: 2 });
    assert.equal(answer.training_data_path, data);
    await waitForOperation(api.store, String(answer.operation_id));
  });

  test('Ctrl-C stops the wait only: exit 130 with how to watch it again; the operation runs on', async () => {
    const { catalog: c, args } = await catalog();
    // Without consumers the reset cannot finish: the wait is surely interrupted, not ended.
    await api.stopConsumers();
    try {
      const result = await runCli('reset', args, { url: api.url, interruptWhenStdoutHas: '%  ' });
      assert.equal(result.code, 130);
      const id = (await lastOperation(c)).operationId;
      assert.equal(
        result.stderr,
        `Stopped waiting; operation ${id} keeps running. Watch it again with: lattice vss status ${id} --wait\n`,
      );
      const status = await runCli('status', [id], { url: api.url });
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, new RegExp(`^operation ${id} \\(RESET_MODEL\\) (PENDING|RUNNING)`));
    } finally {
      await api.startConsumers();
    }
    const id = (await lastOperation(c)).operationId;
    const watched = await runCli('status', [id, '--wait'], { url: api.url });
    assert.equal(watched.code, 0, watched.stderr);
    assert.match(watched.stdout, new RegExp(`\noperation ${id} \\(RESET_MODEL\\) SUCCEEDED\n$`));
  });
});

describe('status', () => {
  test('without --wait: one look, exit 0 even for a failed operation (the query succeeded)', async () => {
    const { catalog: c, args } = await catalog(false);
    await runCli('reset', [...args, '--no-wait'], { url: api.url });
    const id = (await lastOperation(c)).operationId;
    const failed = await waitForOperation(api.store, id, ['FAILED']);
    const status = await runCli('status', [id], { url: api.url });
    assert.equal(status.code, 0);
    assert.equal(
      status.stdout,
      // The job's summary was recorded when it started, before its failure was seen.
      `operation ${id} (RESET_MODEL) FAILED at start_job\n  rows published: 0\n  last error: ${failed.lastError}\n`,
    );
    const json = await runCli('status', [id, '--json'], { url: api.url });
    assert.equal((JSON.parse(json.stdout) as Record<string, unknown>).last_error, failed.lastError);
  });

  test('rows published and bad rows are shown when the operation reports them', async () => {
    const { catalog: c, args } = await catalog();
    // The job publishes every row, but without consumers the reset waits at ingesting for them.
    await api.stopConsumers();
    let id = '';
    try {
      await runCli('reset', [...args, '--no-wait'], { url: api.url });
      id = (await lastOperation(c)).operationId;
      const expected =
        `operation ${id} (RESET_MODEL) RUNNING at ingesting (69%)\n  rows published: ${ROWS}\n` +
        `  bad rows: 2 (the operation's result lists them: --json)\n`;
      let shown = '';
      await eventually(
        async () => {
          shown = (await runCli('status', [id], { url: api.url })).stdout;
          return shown === expected;
        },
        60_000,
        'the job to have published every row',
      ).catch((err: Error) => assert.fail(`${err.message}; last shown:\n${shown}`));
    } finally {
      await api.startConsumers();
    }
    await waitForOperation(api.store, id);
  });
});

describe('watchOperation', () => {
  test('rides out an unreachable API for its grace period, then gives up with the reason', async () => {
    const client = new AdminClient({ url: `http://127.0.0.1:${await closedPort()}` });
    let clock = 0;
    let reads = 0;
    await assert.rejects(
      watchOperation(client, 'op-1', {
        signal: new AbortController().signal,
        pollIntervalMs: 1,
        unreachableGraceMs: 1000,
        // Each failed poll reads the clock and moves it 150 ms on: the wait gives up once 1000 ms have passed.
        now: () => {
          reads++;
          clock += 150;
          return clock;
        },
        onUpdate: () => assert.fail('no answer expected'),
      }),
      (err: unknown) => err instanceof AdminUnreachableError && /ECONNREFUSED/.test(err.message),
    );
    assert.ok(reads >= 7, `${reads} clock reads`);
  });
});

describe('ProgressRenderer', () => {
  const at = (progress: number, step = 'INGESTING', rows?: number) => ({
    ...bareOperation('op'),
    status: 'RUNNING',
    step,
    progress,
    ...(rows === undefined ? {} : { rowsPublished: rows }),
  });

  test('plain lines: at each change of step, else at most one per interval while progress moves', () => {
    const out = new CapturedStream(false);
    let now = 0;
    const renderer = new ProgressRenderer(out, { intervalMs: 1000, now: () => now });
    renderer.update(at(0.1));
    now = 500;
    renderer.update(at(0.2));
    now = 1100;
    renderer.update(at(0.2));
    renderer.update(at(0.3));
    now = 1200;
    renderer.update(at(0.3, 'INDEXING'));
    renderer.finish();
    assert.equal(
      out.text,
      'operation op: 10%  INGESTING\noperation op: 20%  INGESTING\noperation op: 30%  INDEXING\n',
    );
  });

  test('plain lines with no interval: one at every move of the progress or the rows, none when still', () => {
    const out = new CapturedStream(false);
    const renderer = new ProgressRenderer(out, { intervalMs: 0, now: () => 0 });
    renderer.update(at(0.25, 'INGESTING', 1200));
    renderer.update(at(0.25, 'INGESTING', 1200));
    renderer.update(at(0.5, 'INGESTING', 2400));
    renderer.update(at(0.5, 'INGESTING', 2500));
    assert.equal(
      out.text,
      'operation op: 25%  INGESTING  1,200 rows published\n' +
        'operation op: 50%  INGESTING  2,400 rows published\n' +
        'operation op: 50%  INGESTING  2,500 rows published\n',
    );
  });

  test('on a terminal: the bar filled to the progress, the counts, the outcome; one line redrawn', () => {
    const out = new CapturedStream(true);
    const renderer = new ProgressRenderer(out);
    renderer.update({ ...at(0.25, 'INGESTING', 1200) });
    renderer.update({ ...at(1, 'DONE', 4800), status: 'SUCCEEDED', badRowCount: 3 });
    renderer.finish();
    assert.equal(
      out.text,
      `\r[${'█'.repeat(6)}${'░'.repeat(18)}]  25%  INGESTING  1,200 rows published\x1b[K` +
        `\r[${'█'.repeat(24)}] 100%  DONE  (SUCCEEDED)  4,800 rows published  3 bad rows\x1b[K\n`,
    );
  });
});
