/**
 * `lattice search` against real vss serving (the serving test world: model catalog/clip, variants
 * organic and ad, attributes brand and price): the table, --json, filters, pages, a bad usage
 * (exit 2), and a server that is down.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseFilter } from '../../src/cli/commands/search.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { runCaptured } from '../support/cli-capture.js';
import { openWorld, type World } from '../vss/serving/harness.js';

const run = (argv: string[]) => runCaptured(['search', ...argv]);

describe('lattice search', () => {
  let world: World;
  let target: string;
  before(async () => {
    world = await openWorld();
    target = `127.0.0.1:${world.server.port}`;
  });
  after(() => world.close());

  test('by id: a table of candidates with the asked attributes, and the next page token', async () => {
    const id = world.fixture.ids[0]!;
    const base = ['--address', target, '--entity', 'catalog', '--model', 'clip', '--variant', 'organic'];
    const page = await run([...base, '--id', id, '--attributes', 'brand,price', '--page-size', '5']);
    assert.equal(page.exitCode, 0, page.err);
    const lines = page.out.split('\n');
    assert.match(lines[0]!, /^#\s+ID\s+SCORE\s+BRAND\s+PRICE/);
    assert.equal(lines.filter((l) => /^\d+\s/.test(l)).length, 5);
    const token = /next page: --page-token (\S+)/.exec(page.out)?.[1];
    assert.ok(token, page.out);
    const next = await run([...base, '--id', id, '--page-size', '5', '--page-token', token, '--json']);
    const second = JSON.parse(next.out) as { candidates: { id: string }[] };
    assert.equal(second.candidates.length, 5);
    const first = lines.filter((l) => /^\d+\s/.test(l)).map((l) => l.split(/\s+/)[1]);
    for (const c of second.candidates) assert.ok(!first.includes(c.id), 'pages do not repeat');

    const filtered = await run([
      ...base,
      '--id',
      id,
      '--filter',
      'brand=b',
      '--attributes',
      'brand',
      '--json',
    ]);
    const candidates = (JSON.parse(filtered.out) as { candidates: { attributes: { brand: string } }[] })
      .candidates;
    assert.ok(candidates.length > 0);
    for (const c of candidates) assert.equal(c.attributes.brand, 'b');
  });

  test('by vector; filters in every form', async () => {
    const { vectors, dimension } = world.fixture;
    const vector = vectors.subarray(3 * dimension, 4 * dimension);
    const answer = await run([
      '--address',
      target,
      '--entity',
      'catalog',
      '--model',
      'clip',
      '--variant',
      'organic',
      `--vector=${Array.from(vector).join(',')}`,
      '--filter',
      'price:LT:10',
      '--attributes',
      'price',
      '--json',
    ]);
    assert.equal(answer.exitCode, 0, answer.err);
    for (const c of (JSON.parse(answer.out) as { candidates: { attributes: { price: string } }[] })
      .candidates) {
      assert.ok(Number(c.attributes.price) < 10);
    }
    assert.deepEqual(parseFilter('brand!=a,b'), { field: 'brand', op: 'NOT_IN', values: ['a', 'b'] });
    assert.deepEqual(parseFilter('tag:EXISTS'), { field: 'tag', op: 'EXISTS', values: [] });
    assert.deepEqual(parseFilter('price:BETWEEN:1,5'), { field: 'price', op: 'BETWEEN', values: ['1', '5'] });
  });

  test('bad usage exits 2 with the usage; an unknown model is the server answer; a down server says what to do', async () => {
    const usage = await run(['--entity', 'catalog', '--model', 'clip']);
    assert.equal(usage.exitCode, 2);
    assert.match(usage.err, /exactly one of --id and --vector[\s\S]*Usage: lattice search/);
    assert.equal((await run(['--bogus'])).exitCode, 2);
    assert.equal((await run(['--help'])).exitCode, 0);
    await assert.rejects(
      run(['--address', target, '--entity', 'catalog', '--model', 'nope', '--id', 'x']),
      (err) => isLatticeError(err) && /search failed \((NOT_FOUND|INVALID_ARGUMENT)\)/.test(err.message),
    );
    await assert.rejects(
      run(['--address', '127.0.0.1:1', '--entity', 'catalog', '--model', 'clip', '--id', 'x']),
      (err) =>
        isLatticeError(err, 'UNAVAILABLE') && /not reachable at 127\.0\.0\.1:1.*lattice up/.test(err.message),
    );
  });
});
