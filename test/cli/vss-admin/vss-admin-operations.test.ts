/**
 * Waiting on admin operations from the CLI: `--wait` polls GET /operations/{id} with a progress
 * display (a redrawn bar on a terminal, plain lines elsewhere) to SUCCEEDED (exit 0) or FAILED
 * (exit 1 with the operation's last error); Ctrl-C stops the wait only (exit 130, with how to watch
 * again); `status` and `retry`. The API is the stand-in of admin-api-stand-in.ts, whose operations
 * advance one step per poll.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AdminClient, AdminUnreachableError } from '../../../src/cli/vss-admin/admin-client.js';
import { bareOperation } from '../../../src/cli/vss-admin/operation-view.js';
import { ProgressRenderer } from '../../../src/cli/vss-admin/progress.js';
import { watchOperation } from '../../../src/cli/vss-admin/watch-operation.js';
import { closedPort } from '../../support/closed-port.js';
import { AdminApiStandIn } from './admin-api-stand-in.js';
import { CapturedStream, runCli } from './cli-harness.js';

const api = new AdminApiStandIn();

before(() => api.start());
after(() => api.stop());

const reset = (model: string, ...flags: string[]) => ['--entity', 'catalog', '--model', model, ...flags];
const lastOperationId = (): string => [...api.operations.keys()].at(-1)!;

describe('--wait', () => {
  test('reset waits by default: plain progress lines when stdout is not a terminal, exit 0 on SUCCEEDED', async () => {
    const result = await runCli('reset', reset('products'), { url: api.url });
    assert.equal(result.code, 0, result.stderr);
    const id = lastOperationId();
    assert.deepEqual(result.stdout.trimEnd().split('\n'), [
      `Reset accepted: operation ${id}; version 2, variants organic → 2, ads → 2, mq_id 1, training data /data/catalog`,
      `operation ${id}: 0%  PENDING`,
      `operation ${id}: 25%  INGESTING  1,200 rows published`,
      // 50% is in the same step and within the plain-line interval: not repeated.
      `operation ${id}: 80%  INDEXING  4,800 rows published  3 bad rows`,
      `operation ${id}: 100%  DONE  (SUCCEEDED)  4,800 rows published  3 bad rows`,
      `operation ${id} (RESET_MODEL) SUCCEEDED`,
    ]);
    assert.equal(result.stderr, '');
    assert.equal(api.requestsTo(`/operations/${id}`).length, 5);
  });

  test('plain lines also as the progress moves, once the interval has passed', async () => {
    const result = await runCli('reset', reset('products'), { url: api.url, plainProgressIntervalMs: 0 });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /: 50% {2}INGESTING {2}2,400 rows published\n/);
  });

  test('on a terminal: one bar redrawn in place, then the outcome on its own line', async () => {
    const result = await runCli(
      'trigger',
      ['--entity', 'catalog', '--model', 'products', '--variant', 'organic'],
      {
        url: api.url,
        tty: true,
      },
    );
    assert.equal(result.code, 0, result.stderr);
    const id = lastOperationId();
    const [accepted, bar, outcome] = result.stdout.split('\n');
    assert.equal(accepted, `Accepted: operation ${id} PENDING`);
    const frames = bar!.split('\r').slice(1);
    assert.equal(frames.length, 5);
    assert.equal(
      frames[1],
      `[${'█'.repeat(6)}${'░'.repeat(18)}]  25%  INGESTING  1,200 rows published\x1b[K`,
    );
    assert.equal(
      frames[4],
      `[${'█'.repeat(24)}] 100%  DONE  (SUCCEEDED)  4,800 rows published  3 bad rows\x1b[K`,
    );
    assert.equal(outcome, `operation ${id} (TRIGGER_MODEL_MACHINE) SUCCEEDED`);
  });

  test('a FAILED operation: exit 1 with its last error and how to retry it', async () => {
    const result = await runCli('reset', reset('failing'), { url: api.url });
    assert.equal(result.code, 1);
    const id = lastOperationId();
    assert.equal(
      result.stderr,
      `lattice: operation ${id} (RESET_MODEL) FAILED at INGESTING: training data not found: /data/nope\n` +
        `Retry it from the failed step with: lattice vss retry ${id}\n`,
    );
    assert.match(result.stdout, /: 10% {2}INGESTING {2}\(FAILED\)\n$/);
  });

  test('retry resumes a failed operation and waits for it', async () => {
    await runCli('promote', ['--entity', 'catalog', '--model', 'failing', '--no-wait'], { url: api.url });
    const id = lastOperationId();
    const failed = await runCli('status', [id, '--wait'], { url: api.url });
    assert.equal(failed.code, 1);
    const retried = await runCli('retry', [id, '--idempotency-key', 'retry-1'], { url: api.url });
    assert.equal(retried.code, 0, retried.stderr);
    assert.match(retried.stdout, new RegExp(`^Retry accepted: operation ${id} RUNNING\n`));
    assert.match(retried.stdout, new RegExp(`operation ${id} \\(PROMOTE_MODEL\\) SUCCEEDED\n$`));
    const request = api.requestsTo(`/operations/${id}/retry`).at(-1)!;
    assert.equal(request.headers['idempotency-key'], 'retry-1');
    // The route takes no body (vss.md: POST /operations/{id}/retry).
    assert.equal(request.headers['content-type'], undefined);
    assert.equal(request.body, undefined);
    const again = await runCli('retry', [id], { url: api.url });
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `lattice: operation ${id} has not failed (FAILED_PRECONDITION)\n`);
  });

  test('--no-wait returns once accepted, with how to watch it', async () => {
    const result = await runCli('reset', reset('products', '--no-wait'), { url: api.url });
    assert.equal(result.code, 0, result.stderr);
    const id = lastOperationId();
    assert.match(result.stdout, new RegExp(`Watch it with: lattice vss status ${id} --wait\n$`));
    assert.equal(api.requestsTo(`/operations/${id}`).length, 0);
  });

  test('a repeated Idempotency-Key: the operation recorded earlier, said so', async () => {
    const first = await runCli('reset', reset('products', '--idempotency-key', 'k-1', '--no-wait'), {
      url: api.url,
    });
    const id = lastOperationId();
    const again = await runCli('reset', reset('products', '--idempotency-key', 'k-1', '--no-wait'), {
      url: api.url,
    });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(lastOperationId(), id);
    assert.doesNotMatch(first.stdout, /Recorded earlier/);
    assert.ok(
      again.stdout.includes(`operation ${id}; version 2`) &&
        again.stdout.includes('\n(Recorded earlier under this Idempotency-Key: nothing new was started.)\n'),
      again.stdout,
    );
  });

  test('--json with the wait: stdout holds the final operation only, the progress goes to stderr', async () => {
    const result = await runCli('reset', reset('products', '--json'), { url: api.url });
    assert.equal(result.code, 0, result.stderr);
    const final = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(final.status, 'SUCCEEDED');
    assert.equal(final.operation_id, lastOperationId());
    assert.match(result.stderr, /: 25% {2}INGESTING/);
    const accepted = await runCli('reset', reset('products', '--json', '--no-wait'), { url: api.url });
    assert.deepEqual((JSON.parse(accepted.stdout) as Record<string, unknown>).variant_version_map, {
      organic: 2,
      ads: 2,
    });
  });

  test('Ctrl-C stops the wait only: exit 130 with how to watch it again', async () => {
    const result = await runCli('reset', reset('endless'), {
      url: api.url,
      interruptWhenStdoutHas: 'INGESTING',
    });
    assert.equal(result.code, 130);
    const id = lastOperationId();
    assert.equal(
      result.stderr,
      `Stopped waiting; operation ${id} keeps running. Watch it again with: lattice vss status ${id} --wait\n`,
    );
    const polls = api.requestsTo(`/operations/${id}`).length;
    assert.ok(polls >= 1, `${polls} polls`);
    // The operation is untouched by the interrupt: still running on the server.
    const status = await runCli('status', [id], { url: api.url });
    assert.equal(status.code, 0, status.stderr);
    assert.equal(status.stdout, `operation ${id} (RESET_MODEL) RUNNING at INGESTING (40%)\n`);
  });
});

describe('status', () => {
  test('without --wait: one look, exit 0 even for a failed operation (the query succeeded)', async () => {
    await runCli('reset', reset('failing', '--no-wait'), { url: api.url });
    const id = lastOperationId();
    const first = await runCli('status', [id], { url: api.url });
    assert.equal(first.stdout, `operation ${id} (RESET_MODEL) RUNNING at INGESTING (10%)\n`);
    const second = await runCli('status', [id], { url: api.url });
    assert.equal(second.code, 0);
    assert.equal(
      second.stdout,
      `operation ${id} (RESET_MODEL) FAILED at INGESTING\n  last error: training data not found: /data/nope\n`,
    );
    const json = await runCli('status', [id, '--json'], { url: api.url });
    assert.equal(
      (JSON.parse(json.stdout) as Record<string, unknown>).last_error,
      'training data not found: /data/nope',
    );
  });

  test('rows published are shown when the operation reports them', async () => {
    await runCli('reset', reset('products', '--no-wait'), { url: api.url });
    const id = lastOperationId();
    await runCli('status', [id], { url: api.url });
    const running = await runCli('status', [id], { url: api.url });
    assert.equal(
      running.stdout,
      `operation ${id} (RESET_MODEL) RUNNING at INGESTING (25%)\n  rows published: 1,200\n`,
    );
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
  test('plain lines: at each change of step, else at most one per interval while progress moves', () => {
    const out = new CapturedStream(false);
    let now = 0;
    const renderer = new ProgressRenderer(out, { intervalMs: 1000, now: () => now });
    const at = (progress: number, step = 'INGESTING') => ({
      ...bareOperation('op'),
      status: 'RUNNING',
      step,
      progress,
    });
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
});
