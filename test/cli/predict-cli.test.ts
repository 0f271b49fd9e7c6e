/**
 * `lattice predict` against the orchestrator and the reference servers with the seeded
 * catalog_ranker (test/support/stack.ts): targets from flags, a JSON file and a CSV file, decoded
 * scores per row, --json, pair-wise, --timings, bad usage (exit 2) and a server that is down.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseTarget } from '../../src/cli/commands/predict.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { runCaptured } from '../support/cli-capture.js';
import { type Stack, startStack } from '../support/stack.js';

const run = (argv: string[]) => runCaptured(['predict', ...argv]);

describe('lattice predict', () => {
  let stack: Stack;
  let base: string[];
  before(async () => {
    stack = await startStack();
    base = ['--address', stack.address, '--model-config', 'catalog_ranker', '--context', 'user_id=u1'];
  });
  after(() => stack.stop());

  test('targets from flags: a table of decoded scores per target, no row errors', async () => {
    const answer = await run([...base, '--target-id', 'c1', '--target-id', 'c2']);
    assert.equal(answer.exitCode, 0, answer.err);
    const lines = answer.out.split('\n');
    assert.match(lines[0]!, /^ROW\s+.*FINAL_SCORE.*ERROR$/);
    assert.match(lines[1]!, /^c1\s+.*\s-$/);
    assert.match(lines[2]!, /^c2\s+/);
    const json = await run([...base, '--target-id', 'c1', '--json']);
    const result = JSON.parse(json.out) as {
      targets: { id: string; values: { final_score: number }; error: string }[];
    };
    assert.equal(result.targets[0]!.id, 'c1');
    assert.equal(typeof result.targets[0]!.values.final_score, 'number');
    assert.equal(result.targets[0]!.error, '');
  });

  test('targets from a JSON file and a CSV file; pair-wise', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-predict-'));
    writeFileSync(join(dir, 't.json'), JSON.stringify(['c3', { id: 'c4' }]));
    writeFileSync(join(dir, 't.csv'), 'id,note\nc5,"a, b"\nc6,x\n');
    const fromJson = JSON.parse((await run([...base, '--targets', join(dir, 't.json'), '--json'])).out) as {
      targets: { id: string }[];
    };
    assert.deepEqual(
      fromJson.targets.map((t) => t.id),
      ['c3', 'c4'],
    );
    const fromCsv = await run([...base, '--targets', join(dir, 't.csv'), '--json']);
    // The CSV's extra column is a request feature the ranker does not read: still scored.
    assert.deepEqual(
      (JSON.parse(fromCsv.out) as { targets: { id: string }[] }).targets.map((t) => t.id),
      ['c5', 'c6'],
    );
    assert.deepEqual(parseTarget('c2:price=12.5;brand=a'), {
      id: 'c2',
      features: { price: 12.5, brand: 'a' },
    });
    const pair = await run([
      ...base,
      '--kind',
      'pair',
      '--target-id',
      'c1',
      '--target-id',
      'c2',
      '--pairs',
      '0-1',
    ]);
    // catalog_ranker scores pairs with its slate model: one pair row with its scores, no error.
    assert.equal(pair.exitCode, 0, pair.err);
    assert.match(
      pair.out,
      /^ROW\s+SLATE_CTR\s+PREFERENCE\s+ERROR\npair 0\s+0\.\d+\s+0\.\d+\s+-\ntracking id: \S+$/,
    );
  });

  test('--pairs and --slates repeated keep every pair and slate', async () => {
    const targets = ['--target-id', 'c1', '--target-id', 'c2', '--target-id', 'c3'];
    const cases = [
      { kind: 'pair', flags: ['--pairs', '0-1', '--pairs', '1-2,2-0'], rows: 3 },
      { kind: 'slate', flags: ['--slates', '0.1', '--slates', '2'], rows: 2 },
    ] as const;
    for (const { kind, flags, rows } of cases) {
      const answer = await run([...base, ...targets, '--kind', kind, ...flags, '--json']);
      assert.equal(answer.exitCode, 0, answer.err);
      const result = JSON.parse(answer.out) as Record<'pairs' | 'slates', unknown[]>;
      assert.equal(result[`${kind}s`].length, rows, `${kind}: ${answer.out}`);
    }
  });

  test('the answer carries the tracking id: --tracking-id, else the one the orchestrator assigned', async () => {
    const given = await run([...base, '--target-id', 'c1', '--tracking-id', 'cli-track-7', '--json']);
    assert.equal(given.exitCode, 0, given.err);
    assert.equal((JSON.parse(given.out) as { trackingId: string }).trackingId, 'cli-track-7');
    const table = await run([...base, '--target-id', 'c1', '--tracking-id', 'cli-track-8']);
    assert.match(table.out, /\ntracking id: cli-track-8$/);
    // Without one, each answer names the id the orchestrator gave the request (its inference log's).
    const ids: string[] = [];
    // One after the other: runCaptured captures the console of this process.
    for (const _ of [1, 2]) {
      const assigned = await run([...base, '--target-id', 'c1', '--json']);
      ids.push((JSON.parse(assigned.out) as { trackingId: string }).trackingId);
    }
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.notEqual(ids[0], ids[1]);
  });

  test('--timings prints each component of the DAG after the scores, with --json in the JSON', async () => {
    const { topology, components } = stack.orchestrator.registry.require('catalog_ranker').model;
    const nodes = topology.nodes;
    const kindOf = (name: string) => components.get(name)?.kind ?? 'feature_init';
    const plain = await run([...base, '--target-id', 'c1']);
    assert.doesNotMatch(plain.out, /COMPONENT/, 'no timings unless asked');
    const answer = await run([...base, '--target-id', 'c1', '--target-id', 'c2', '--timings']);
    assert.equal(answer.exitCode, 0, answer.err);
    const [scores, timings] = answer.out.split('\n\n');
    assert.match(scores!, /^ROW\s+.*FINAL_SCORE.*ERROR\nc1\s+.*\nc2\s+/);
    const lines = timings!.trimEnd().split('\n');
    assert.match(lines[0]!, /^COMPONENT\s+KIND\s+STATE\s+START_MS\s+DURATION_MS$/);
    assert.deepEqual(
      lines.slice(1, -1).map((line) => line.split(/\s+/).slice(0, 3)),
      nodes.map((name) => [name, kindOf(name), 'ran']),
    );
    for (const line of lines.slice(1, -1)) assert.match(line, /\s\d+\.\d{3}\s+\d+\.\d{3}$/);
    assert.match(lines.at(-1)!, /^total: \d+\.\d{3} ms$/);
    const json = JSON.parse((await run([...base, '--target-id', 'c1', '--timings', '--json'])).out) as {
      timings: { total_ms: number; components: { name: string; state: string }[] };
    };
    assert.deepEqual(
      json.timings.components.map((c) => [c.name, c.state]),
      nodes.map((name) => [name, 'ran']),
    );
  });

  test('bad usage exits 2; an unknown model config is the server answer; a down server says what to do', async () => {
    const usage = await run(['--model-config', 'catalog_ranker', '--kind', 'slate', '--slates', '0']);
    assert.equal(usage.exitCode, 2);
    assert.match(usage.err, /give targets[\s\S]*Usage: lattice predict/);
    assert.equal((await run(['--nope'])).exitCode, 2);
    assert.equal((await run([...base, '--target-id', 'c1', '--kind', 'pair'])).exitCode, 2);
    assert.equal((await run(['--help'])).exitCode, 0);
    await assert.rejects(
      run(['--address', stack.address, '--model-config', 'no_such_model', '--target-id', 'c1']),
      (err) => isLatticeError(err) && /predict failed \((NOT_FOUND|INVALID_ARGUMENT)\)/.test(err.message),
    );
    await assert.rejects(
      run(['--address', '127.0.0.1:1', '--model-config', 'catalog_ranker', '--target-id', 'c1']),
      (err) =>
        isLatticeError(err, 'UNAVAILABLE') && /not reachable at 127\.0\.0\.1:1.*lattice up/.test(err.message),
    );
  });
});
