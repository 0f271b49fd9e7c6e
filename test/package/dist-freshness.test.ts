/**
 * When a clone's `lattice` runs dist/ (fresh) or the sources (stale), and when `npm start` / `npm test`
 * rebuild: scripts/dist-freshness.mjs on a tree of its own, with modification times set by hand.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
// @ts-expect-error: a plain ES module of the build scripts, without declarations
import { distIsFresh, generatedIsFresh } from '../../scripts/dist-freshness.mjs';

const root = mkdtempSync(join(tmpdir(), 'lattice-dist-fresh-'));
after(() => rmSync(root, { recursive: true, force: true }));

const INPUTS = [
  'src/cli/main.ts',
  'examples/catalog-ranker.ts',
  'proto/a.proto',
  'buf.yaml',
  'buf.gen.yaml',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build.mjs',
  'scripts/gen-proto.mjs',
  'scripts/build-console.mjs',
];

/** Writes `path` under the root with its modification time at `seconds` (since the epoch). */
function file(path: string, seconds: number): void {
  const at = join(root, path);
  mkdirSync(dirname(at), { recursive: true });
  writeFileSync(at, '');
  utimesSync(at, seconds, seconds);
}

describe('dist freshness', () => {
  test('fresh only when the stamp and src/gen are newer than every input', () => {
    for (const path of INPUTS) file(path, 1000);
    assert.equal(distIsFresh(root), false, 'no src/gen, no dist/');
    file('src/gen/a_pb.ts', 1100);
    assert.equal(generatedIsFresh(root), true);
    assert.equal(distIsFresh(root), false, 'no stamp yet');
    file('dist/.built', 1200);
    assert.equal(distIsFresh(root), true);

    file('src/cli/main.ts', 1300); // a source edited after the build
    assert.equal(distIsFresh(root), false);
    file('dist/.built', 1400); // rebuilt
    assert.equal(distIsFresh(root), true);

    file('examples/catalog-ranker.ts', 1500);
    assert.equal(distIsFresh(root), false, 'examples are compiled too');
    file('dist/.built', 1600);

    file('proto/a.proto', 1700); // the generated code is stale, so is dist/
    assert.equal(generatedIsFresh(root), false);
    assert.equal(distIsFresh(root), false);
    file('src/gen/a_pb.ts', 1800);
    file('dist/.built', 1900);
    assert.equal(distIsFresh(root), true);

    file('src/console/app/styles.css', 2000); // the console is bundled into dist/console
    assert.equal(distIsFresh(root), false);
    file('dist/.built', 2100);
    file('scripts/build-console.mjs', 2200); // so is how it is bundled
    assert.equal(distIsFresh(root), false);
    file('dist/.built', 2300);

    file('package-lock.json', 2400); // dependencies changed
    assert.equal(distIsFresh(root), false);
    file('src/gen/a_pb.ts', 2500);
    file('dist/.built', 2600);
    assert.equal(distIsFresh(root), true);

    file('scripts/gen-proto.mjs', 2700); // the generator writes more (or other) files now
    assert.equal(generatedIsFresh(root), false);
    assert.equal(distIsFresh(root), false);
  });
});
