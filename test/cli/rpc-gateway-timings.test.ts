/**
 * Per-request component timings over HTTP/JSON on a running `lattice up` (issue 39: the predict
 * playground's timings): `X-Lattice-Timings: 1` on a Predict or legacy call is passed on as the
 * `lattice-timings` metadata, and the orchestrator's trailer comes back as the `X-Lattice-Timings`
 * response header, naming every component of the seeded catalog_ranker's DAG (as its console route
 * draws it); without the header there is none; a request FeatureInit refuses still gets one.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RequestTimings } from '../../src/orchestrator/client.js';
import { startLattice } from '../support/lattice-up-process.js';
import { eventually } from '../support/servers.js';

/** `lattice up` starts every part and onboards the vss demo: a loaded 2-core machine has taken 50 s. */
const START_TIMEOUT_MS = 180_000;

const userU1 = { name: 'user_id', dataType: 'DATA_TYPE_STRING', value: Buffer.from('u1').toString('base64') };

describe('X-Lattice-Timings on lattice up', () => {
  let child: ChildProcess | undefined;
  let http = '';

  before(async () => {
    const started = startLattice(['up'], {
      LATTICE_DATA_DIR: mkdtempSync(join(tmpdir(), 'lattice-timings-')),
    });
    child = started.child;
    await eventually(
      () => started.output.stdout.includes('Ctrl-C') || started.child.exitCode !== null,
      START_TIMEOUT_MS,
      'lattice up to start',
    );
    http = /HTTP \/healthz \/readyz \/metrics(?: \/models)?\s+(\S+)/.exec(started.output.stdout)?.[1] ?? '';
    assert.ok(http, `${started.output.stdout}\n${started.output.stderr}`);
  });
  after(() => {
    child?.kill('SIGKILL');
  });

  async function post(method: string, body: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${http}/api/v1/rpc/orchestrator.v1.${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const header = response.headers.get('x-lattice-timings');
    return {
      status: response.status,
      json: (await response.json()) as Record<string, unknown>,
      timings: header === null ? undefined : (JSON.parse(header) as RequestTimings),
    };
  }

  /** The catalog_ranker's components as the console's DAG route lists them. */
  async function dagNodes(): Promise<{ id: string; kind: string }[]> {
    const response = await fetch(`${http}/api/v1/models/catalog_ranker/dag`);
    assert.equal(response.status, 200);
    return ((await response.json()) as { nodes: { id: string; kind: string }[] }).nodes;
  }

  const request = {
    modelConfigId: 'catalog_ranker',
    contextFeatures: [userU1],
    targets: [{ id: 'c1' }, { id: 'c2' }],
  };

  test('Predict: no header, no timings; X-Lattice-Timings: 1, every component of the DAG', async () => {
    const plain = await post('Predict/InferPointWise', request);
    assert.equal(plain.status, 200, JSON.stringify(plain.json));
    assert.equal(plain.timings, undefined);
    const timed = await post('Predict/InferPointWise', request, { 'X-Lattice-Timings': '1' });
    assert.equal(timed.status, 200, JSON.stringify(timed.json));
    assert.deepEqual(timed.json, { ...plain.json, trackingId: timed.json.trackingId }, 'the same answer');
    const timings = timed.timings!;
    assert.ok(timings, 'the X-Lattice-Timings response header');
    const nodes = await dagNodes();
    assert.deepEqual(
      timings.components.map((c) => [c.name, c.kind]).sort(),
      nodes.map((n) => [n.id, n.kind]).sort(),
    );
    assert.equal(timings.components[0]!.name, 'feature_init', 'in topological order');
    for (const c of timings.components) {
      assert.equal(c.state, 'ran', c.name);
      assert.ok(c.start_ms >= 0 && c.duration_ms >= 0 && c.start_ms <= timings.total_ms, JSON.stringify(c));
    }
  });

  test('an error answers the header too: FeatureInit refused, the rest skipped', async () => {
    const refused = await post(
      'Predict/InferPointWise',
      { ...request, targets: [] },
      { 'x-lattice-timings': 'true' },
    );
    assert.equal(refused.status, 400);
    assert.deepEqual(
      refused.timings!.components.map((c) => c.state),
      ['failed', ...Array<string>(refused.timings!.components.length - 1).fill('skipped')],
    );
  });

  test('the legacy RetrieveModelScore answers timings too', async () => {
    const legacy = await post(
      'Orchestrator/RetrieveModelScore',
      {
        modelConfigId: 'catalog_ranker',
        entities: [
          { entity: 'catalog_id', ids: ['c1'] },
          { entity: 'user_id', ids: ['u1'] },
        ],
      },
      { 'X-Lattice-Timings': '1' },
    );
    assert.equal(legacy.status, 200, JSON.stringify(legacy.json));
    assert.deepEqual(
      legacy.timings!.components.map((c) => c.name).sort(),
      (await dagNodes()).map((n) => n.id).sort(),
    );
  });
});
