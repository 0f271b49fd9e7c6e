import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { demoRankerFeatures } from '../../src/modelserver/demo-models.js';
import { logisticRanker } from '../../src/modelserver/onnx-builder.js';
import { eventually } from '../support/servers.js';
import {
  assertClose,
  expectedScores,
  featureRows,
  fp32Bytes,
  KServeClient,
  readFp32,
  tempRepository,
} from './kserve-client.js';

const bin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));

function lattice(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, LATTICE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => {
    output.stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output.stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited };
}

describe('lattice modelserver', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  test('demo-models writes a repository that `modelserver` serves until SIGTERM', {
    timeout: 90_000,
  }, async () => {
    const repository = tempRepository();
    const demo = lattice(['modelserver', 'demo-models', '--repository', repository]);
    children.push(demo.child);
    assert.equal(await demo.exited, 0, demo.output.stderr);
    assert.ok(existsSync(join(repository, 'ranker', '2', 'model.onnx')));
    assert.match(demo.output.stdout, /ranker v1/);

    const serve = lattice(['modelserver', '--repository', repository, '--port', '0']);
    children.push(serve.child);
    await eventually(
      () => serve.output.stdout.includes('Ctrl-C'),
      60_000,
      `the model server to start (stderr: ${serve.output.stderr})`,
    );
    const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(serve.output.stdout)?.[1]);
    assert.ok(port > 0, serve.output.stdout);
    assert.match(serve.output.stdout, /typed_ranker v1: ids INT64 \[-1, 4\], scale FP16 \[-1, 1\]/);

    const client = new KServeClient(port);
    try {
      assert.equal(await client.ready(), true);
      const k = demoRankerFeatures;
      const x = featureRows(3, k, 5);
      const response = await client.infer({
        modelName: 'ranker',
        inputs: [{ name: 'features', datatype: 'FP32', shape: [3, k] }],
        rawInputContents: [fp32Bytes(x)],
      });
      assert.equal(response.modelVersion, '2');
      const v2 = logisticRanker({ features: k, seed: 2 });
      assertClose(readFp32(response.rawOutputContents[0]!), expectedScores(x, k, v2.weights, v2.bias));
    } finally {
      client.close();
    }
    serve.child.kill('SIGTERM');
    assert.equal(await serve.exited, 0, serve.output.stderr);
  });

  test('a missing repository exits 1 and says how to create one', { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-data-'));
    const run = lattice(['modelserver', '--port', '0'], { LATTICE_DATA_DIR: dataDir });
    children.push(run.child);
    assert.equal(await run.exited, 1);
    assert.match(
      run.output.stderr,
      new RegExp(
        `model repository ${join(dataDir, 'models')} does not exist.*lattice modelserver demo-models`,
      ),
    );
  });
});
