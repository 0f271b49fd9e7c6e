import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type ComputeServer,
  compileExpressionDocument,
  expressionKey,
  startComputeServer,
} from '../../../src/compute/server/index.js';
import type { NumerixClient } from '../../../src/gen/numerix/numerix.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { eventually } from '../../support/servers.js';
import { compute, numerixClient, stringRequest } from './numerix-client.js';

function assertInvalid(run: () => unknown, message: RegExp): void {
  assert.throws(run, (err) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), `expected INVALID_ARGUMENT, got ${String(err)}`);
    assert.match(err.message, message);
    return true;
  });
}

describe('expression documents', () => {
  test('compile the expression and read the optional data_type default', () => {
    const plain = compileExpressionDocument({ expression: 'a b +' });
    assert.deepEqual(plain.expression.variables, ['a', 'b']);
    assert.equal(plain.precision, undefined);
    assert.equal(compileExpressionDocument({ expression: 'a', data_type: 'F32' }).precision, 'fp32');
    assert.equal(compileExpressionDocument({ expression: 'a', data_type: 'f64' }).precision, 'fp64');
  });

  test('reject documents that are not { expression, data_type? }, naming the field', () => {
    assertInvalid(
      () => compileExpressionDocument('a b +'),
      /invalid expression document: document: .*object/i,
    );
    assertInvalid(() => compileExpressionDocument({}), /expression: .*string/i);
    assertInvalid(() => compileExpressionDocument({ expression: 3 }), /expression: .*string/i);
    assertInvalid(() => compileExpressionDocument({ expression: '' }), /expression: must be a non-empty/);
    assertInvalid(
      () => compileExpressionDocument({ expression: 'a', 'data-type': 'fp32' }),
      /unrecognized key.*"data-type"/i,
    );
    assertInvalid(
      () => compileExpressionDocument({ expression: 'a', data_type: 'fp16' }),
      /data_type: unknown precision "fp16"/,
    );
  });

  test('reject an expression the engine cannot compile, with its message', () => {
    assertInvalid(
      () => compileExpressionDocument({ expression: 'a +' }),
      /operator \+ at token 2 needs 2 operands/,
    );
    assertInvalid(() => compileExpressionDocument({ expression: 'a b' }), /leaves 2 values/);
  });

  test('compute ids map to keys under compute/, and ids that cannot be keys are refused', () => {
    assert.equal(expressionKey('blend'), 'compute/blend');
    assert.equal(expressionKey('team/blend'), 'compute/team/blend');
    assertInvalid(() => expressionKey(''), /compute_id must not be empty/);
    assertInvalid(() => expressionKey('../x'), /config key "compute\/..\/x"/);
    assertInvalid(() => expressionKey('a b'), /segment "a b"/);
  });
});

describe('live reload through the file ConfigStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-compute-reload-'));
  const store = new FileConfigStore({ dir, debounceMs: 10, pollIntervalMs: 200 });
  const metrics = new Metrics();
  let server: ComputeServer;
  let client: NumerixClient;

  const scoreOf = async (computeId: string): Promise<string> => {
    const response = await compute(
      client,
      stringRequest({ computeId, schema: ['id', 'a', 'b'] }, [['x', '6', '2']]),
    );
    return response.error
      ? `error: ${response.error.message}`
      : response.computationScoreData!.computationScores[0]!.stringData!.values[1]!;
  };
  const lastError = (computeId: string) =>
    server.registry.status().find((s) => s.computeId === computeId)?.lastError;

  before(async () => {
    await store.put('compute/ready', { expression: 'a b *' });
    await store.put('compute/broken_at_start', { expression: 'a b ??' });
    server = await startComputeServer({
      store,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('test', { level: 'silent' }),
      metrics,
      shutdownGraceMs: 1000,
    });
    client = numerixClient(server.port);
  });

  after(async () => {
    client.close();
    await server.stop();
    await store.close();
  });

  test('expressions stored before start serve the first call; a broken one is reported, not served', async () => {
    assert.equal(await scoreOf('ready'), '12');
    assert.match(lastError('broken_at_start') ?? '', /unknown operator `\?\?` at token 3/);
    assert.equal(
      await scoreOf('broken_at_start'),
      'error: No expression configured for compute_id: broken_at_start',
    );
  });

  test('add, change, break (old keeps serving), fix, delete', async () => {
    assert.equal(await scoreOf('blend'), 'error: No expression configured for compute_id: blend');

    await store.put('compute/blend', { expression: 'a b +' });
    await eventually(async () => (await scoreOf('blend')) === '8', 5000, 'the added expression to serve');

    await store.put('compute/blend', { expression: 'a b /' });
    await eventually(async () => (await scoreOf('blend')) === '3', 5000, 'the changed expression to serve');

    // An expression that does not compile: reported, and a b / keeps serving.
    await store.put('compute/blend', { expression: 'a b / +' });
    await eventually(() => /operator \+ at token 4/.test(lastError('blend') ?? ''), 5000, 'the rejection');
    assert.equal(await scoreOf('blend'), '3');

    // A document of the wrong shape: likewise.
    await store.put('compute/blend', { expr: 'a b -' });
    await eventually(() => /unrecognized key/i.test(lastError('blend') ?? ''), 5000, 'the shape rejection');
    assert.equal(await scoreOf('blend'), '3');

    // A file that is not JSON at all, written by hand: likewise.
    mkdirSync(join(dir, 'compute'), { recursive: true });
    writeFileSync(join(dir, 'compute', 'blend.json'), '{ "expression": "a b -" ');
    await eventually(() => /invalid JSON/.test(lastError('blend') ?? ''), 5000, 'the malformed file report');
    assert.equal(await scoreOf('blend'), '3');

    // Fixed: serves the new version and the error is cleared.
    writeFileSync(join(dir, 'compute', 'blend.json'), '{ "expression": "a b -" }');
    await eventually(async () => (await scoreOf('blend')) === '4', 5000, 'the fixed expression to serve');
    assert.equal(lastError('blend'), undefined);

    await store.delete('compute/blend');
    await eventually(
      async () => (await scoreOf('blend')) === 'error: No expression configured for compute_id: blend',
      5000,
      'the deleted expression to stop serving',
    );
    assert.equal(
      server.registry.status().some((s) => s.computeId === 'blend'),
      false,
    );
  });

  test('reloads are counted by outcome', async () => {
    const body = (await metrics.scrape()).body;
    const count = (computeId: string, outcome: string) =>
      Number(
        new RegExp(
          `compute_expression_reloads_total\\{compute_id="${computeId}",outcome="${outcome}"\\} (\\d+)`,
        ).exec(body)?.[1] ?? 0,
      );
    // A hand-written file may be seen half-written, so the file edits can count once more.
    assert.ok(count('blend', 'applied') >= 3, body);
    assert.ok(count('blend', 'rejected') >= 3, body);
    assert.equal(count('blend', 'removed'), 1);
    assert.equal(count('broken_at_start', 'rejected'), 1);
    assert.match(body, /compute_expressions 1/);
  });
});
