/**
 * package.json `engines.node` tells the truth: its lowest version runs every production dependency
 * (each one's own `engines.node`, from the lockfile) and every Node API the sources use that arrived
 * in a later minor release than the line's first.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

const root = fileURLToPath(new URL('../../', import.meta.url));
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lockfile = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));

interface LockedPackage {
  dev?: boolean;
  optional?: boolean;
  engines?: { node?: string } | string[];
}

/** APIs that raised the floor, with the file that uses each (kept honest by the test below). */
const NODE_API_FLOORS = [
  {
    api: 'zlib.crc32',
    since: '20.15.0',
    usedIn: 'src/platform/queue/memory/journal.ts',
    pattern: /\bcrc32\b/,
  },
];

const lowest = semver.minVersion(packageJson.engines.node);

test('engines.node has a lowest version', () => {
  assert.ok(lowest, `engines.node ${packageJson.engines.node} names no lowest version`);
});

test("engines.node's lowest version runs every production dependency", () => {
  const refused: string[] = [];
  for (const [path, locked] of Object.entries<LockedPackage>(lockfile.packages)) {
    if (path === '' || locked.dev || locked.optional) continue;
    const range = Array.isArray(locked.engines) ? undefined : locked.engines?.node;
    if (range && lowest && !semver.satisfies(lowest, range)) {
      refused.push(`${path.replace(/^.*node_modules\//, '')} needs node ${range}`);
    }
  }
  assert.deepEqual(refused, [], `engines.node is ${packageJson.engines.node}`);
});

test("engines.node's lowest version has every Node API the sources use", () => {
  for (const floor of NODE_API_FLOORS) {
    const source = readFileSync(join(root, floor.usedIn), 'utf8');
    assert.match(
      source,
      floor.pattern,
      `${floor.usedIn} no longer uses ${floor.api}: drop it from the table`,
    );
    assert.ok(
      lowest && semver.gte(lowest, floor.since),
      `${floor.api} (in ${floor.usedIn}) needs Node ${floor.since}; engines.node is ${packageJson.engines.node}`,
    );
  }
});
