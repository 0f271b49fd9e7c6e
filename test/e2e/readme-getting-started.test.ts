/**
 * The README's first predict and first search, then docs/getting-started.md, run as written: every
 * ```sh block marked `<!-- getting-started -->` (README's first, then the page's) runs with bash, in
 * order, in a fresh directory, against `lattice up` started here in place of their `npm start` (on
 * a fresh data directory; its ports free ones, given to the commands through their LATTICE_*_PORT
 * variables as a user would set them, except the model server's 8001, which the page's model config
 * names). `npx lattice` resolves to this clone's bin/lattice.js,
 * as it does inside the clone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startLattice } from '../support/lattice-up-process.js';
import { npxShim } from '../support/npx-shim.js';
import { eventually } from '../support/servers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const MODEL_SERVER_PORT = 8001;

/** Every ```sh block after a `<!-- getting-started -->` marker, in the page's order. */
function gettingStartedBlocks(page: string): string[] {
  return [...page.matchAll(/<!-- getting-started -->\n```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

// On a developer's machine a running Lattice may hold the port: skip, saying so. On CI nothing may
// (as with the real servers of other tests, CI fails rather than skips).
const skip =
  (await portIsFree(MODEL_SERVER_PORT)) || process.env.CI
    ? false
    : `port ${MODEL_SERVER_PORT} (the model server the getting-started model config names) is in use here`;

test('the README and "Getting started" run as written', { timeout: 400_000, skip }, async () => {
  const pages = ['README.md', 'docs/getting-started.md'].map((page) =>
    readFileSync(join(root, page), 'utf8'),
  );
  const blocks = pages.flatMap(gettingStartedBlocks);
  assert.equal(
    blocks.length,
    4,
    'the marked blocks: first predict and search, pairs and slates, features, model config',
  );

  const dir = mkdtempSync(join(tmpdir(), 'lattice-getting-started-'));
  const shims = npxShim(dir);
  const dataDir = join(dir, '.lattice');
  const up = startLattice(['up'], {
    LATTICE_DATA_DIR: dataDir,
    LATTICE_MODELSERVER_PORT: String(MODEL_SERVER_PORT),
  });
  try {
    await eventually(
      () => up.output.stdout.includes('Ctrl-C') || up.child.exitCode !== null,
      240_000,
      'lattice up to start',
    );
    assert.match(up.output.stdout, /Lattice is up/, up.output.stderr);
    const portOf = (pattern: RegExp) => {
      const address = pattern.exec(up.output.stdout)?.[1];
      assert.ok(address, `${pattern} in:\n${up.output.stdout}`);
      return address.slice(address.lastIndexOf(':') + 1);
    };
    const env = {
      ...process.env,
      PATH: `${shims}:${process.env.PATH}`,
      LATTICE_DATA_DIR: dataDir,
      LATTICE_LOG_LEVEL: 'warn',
      LATTICE_ORCHESTRATOR_PORT: portOf(/gRPC orchestrator\.v1 .*\s+(\S+)\n/),
      LATTICE_FEATURESTORE_PORT: portOf(/gRPC retrieve\.FeatureService .*\s+(\S+)\n/),
      LATTICE_VSS_SERVING_PORT: portOf(/gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/),
      LATTICE_MODELSERVER_PORT: String(MODEL_SERVER_PORT),
    };
    const outputs = blocks.map((block, i) => {
      const result = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', block], {
        cwd: dir,
        env,
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(
        result.status,
        0,
        `block ${i + 1}:\n${block}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`,
      );
      return result.stdout;
    });

    // First predict and first search.
    assert.match(outputs[0]!, /^ROW\s+.*FINAL_SCORE[\s\S]*\nc1\s+[\d.]+\s[\s\S]*\nc2\s+[\d.]+\s/);
    const found = outputs[0]!.split('\n').filter((line) => /^\d+\s/.test(line));
    assert.equal(found.length, 10, outputs[0]);
    for (const line of found) {
      // The README's filters: a training-data column and a range on a number.
      assert.match(line, /\sshoes\s+acme\s+(\d+(\.\d+)?)\s*$/);
      assert.ok(Number(/(\S+)\s*$/.exec(line)![1]) < 30, line);
    }
    // Retrieval and ranking in one call: the top 10 products like c1, best final score first.
    const recommended = outputs[0]!
      .split('\n')
      .filter((line) => /^c\d+\s+0\.\d+\s+0\.\d+\s+[\d.]+\s+\w+\s+-$/.test(line));
    assert.equal(recommended.length, 10, outputs[0]);
    const finals = recommended.map((line) => Number(line.split(/\s+/)[1]));
    assert.deepEqual(
      finals,
      [...finals].sort((a, b) => b - a),
    );
    // PairWise and SlateWise on the demo model: one scored row per pair and per slate.
    assert.match(outputs[1]!, /^pair 0\s+0\.\d+\s+0\.\d+\s+-\npair 1\s+0\.\d+\s+0\.\d+\s+-$/m);
    assert.match(outputs[1]!, /^slate 0\s+0\.\d+\s+0\.\d+\s+-\nslate 1\s+0\.\d+\s+0\.5\s+-$/m);
    // The features went into the running feature store.
    assert.match(outputs[2]!, /Loaded 2 shop rows from 1 file\(s\) into the feature store at /);
    // The model config validated, was written, loaded by the running orchestrator and scores.
    assert.match(outputs[3]!, /model config "shop_ranker" is valid; written to models\/shop_ranker/);
    assert.match(outputs[3]!, /^shop_ranker\s+valid\s/m);
    assert.match(outputs[3]!, /^s1\s+0\.\d+\s+-$/m);
    assert.match(outputs[3]!, /^s2\s+0\.\d+\s+-$/m);
    assert.match(outputs[3]!, /^s3\s+0\.\d+\s+shop_features: entity s3 not found$/m);
  } finally {
    up.child.kill('SIGTERM');
    await up.exited;
  }
});
