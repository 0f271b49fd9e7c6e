/**
 * The first `lattice up` on a fresh data directory onboards the vss demo (register, reset, ingest,
 * index). Killed in the middle of that (SIGKILL while the reset is ingesting) and started again at
 * once, `lattice up` finishes the onboarding: the same reset operation, resumed by the admin engine
 * with no retry, both variants READY and searchable.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { adminCall } from '../support/admin-http.js';
import { startLattice } from '../support/lattice-up-process.js';
import { eventually } from '../support/servers.js';
import { Client as VssClient } from '../vss/serving/harness.js';

/** `lattice up` starts every part; a shared 2-core machine under other tests has taken 50 s for it. */
const START_TIMEOUT_MS = 300_000;

describe('lattice up: the vss demo onboarding survives SIGKILL', () => {
  const children: ChildProcess[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-up-demo-crash-'));
  after(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('killed while the demo reset is ingesting, the next start finishes the onboarding', async () => {
    const first = startLattice(['up'], { LATTICE_DATA_DIR: dataDir });
    children.push(first.child);
    await eventually(
      () => /^ {2}ingesting \d+%$/m.test(first.output.stdout),
      START_TIMEOUT_MS,
      `the demo reset to be ingesting (stdout: ${first.output.stdout}, stderr: ${first.output.stderr})`,
    );
    const operationId = /through the admin API: operation (\S+)/.exec(first.output.stdout)?.[1];
    assert.ok(operationId, first.output.stdout);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = startLattice(['up'], { LATTICE_DATA_DIR: dataDir });
    children.push(second.child);
    await eventually(
      () => second.output.stdout.includes('Ctrl-C'),
      START_TIMEOUT_MS,
      `lattice up to start again (stdout: ${second.output.stdout}, stderr: ${second.output.stderr})`,
    );
    const stdout = second.output.stdout;
    assert.match(stdout, /Resuming the vss demo onboarding that a previous start left unfinished/);
    assert.match(stdout, new RegExp(`through the admin API: operation ${operationId}`), 'the same operation');
    assert.match(stdout, /Onboarded the vss demo: model catalog\/products \(1000 products\)/);

    const adminUrl = /HTTP vss admin API .*?\s(http:\/\/\S+)\s*$/m.exec(stdout)?.[1];
    assert.ok(adminUrl, stdout);
    const operation = (await adminCall(adminUrl, 'GET', `/operations/${operationId}`)).json;
    assert.deepEqual([operation.status, operation.attempts, operation.last_error], ['SUCCEEDED', 1, null]);
    const model = (await adminCall(adminUrl, 'GET', '/models/catalog/products')).json as {
      variants: { variant: string; state: string }[];
    };
    assert.deepEqual(model.variants.map((v) => [v.variant, v.state]).sort(), [
      ['all', 'READY'],
      ['shoes', 'READY'],
    ]);

    const vssAddress = /gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/.exec(stdout)?.[1];
    assert.ok(vssAddress, stdout);
    const vss = new VssClient(vssAddress);
    try {
      const found = await vss.search({
        entity: 'catalog',
        modelName: 'products',
        variant: 'shoes',
        queries: [{ candidateId: 'c1', pageToken: '', filters: [] }],
        pageSize: 10,
        attributes: ['category'],
      });
      const candidates = found.results[0]!.candidates;
      assert.equal(candidates.length, 10);
      for (const c of candidates) assert.equal(c.attributes.category, 'shoes');
    } finally {
      vss.close();
    }
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0, second.output.stderr);
  });
});
