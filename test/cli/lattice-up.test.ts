import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { Etcd3 } from 'etcd3';
import type { ModelConfigState } from '../../src/cli/commands/models.js';
import { type DecodedResult, FeatureServiceClient } from '../../src/gen/retrieve/retrieve.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { latticeBin, startLattice } from '../support/lattice-up-process.js';
import { npxShim } from '../support/npx-shim.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import { Client as VssClient } from '../vss/serving/harness.js';

const etcdUrl = await realServer('etcd');
const bin = latticeBin;
const healthProto = fileURLToPath(
  new URL('../../node_modules/grpc-health-check/proto/health/v1/health.proto', import.meta.url),
);

async function healthCheck(address: string, service: string): Promise<unknown> {
  const pkg = grpc.loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const health = new pkg.grpc.health.v1.Health(address, grpc.credentials.createInsecure());
  try {
    return await new Promise<unknown>((resolve, reject) =>
      (health as unknown as { check(r: object, cb: (e: Error | null, r: unknown) => void): void }).check(
        { service },
        (err, res) => (err ? reject(err) : resolve(res)),
      ),
    );
  } finally {
    health.close();
  }
}

/**
 * How long start-up may take here: `lattice up` starts every part (reference servers, orchestrator,
 * vss serving and consumers, each opening its adapters), and a shared 2-core machine under other
 * tests has taken 50 s for it; an idle one takes a few seconds.
 */
const START_TIMEOUT_MS = 120_000;

describe('lattice up', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  test('starts on embedded defaults, serves health, readiness and metrics, and stops on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-up-'));
    const { child, output, exited } = startLattice(['up'], { LATTICE_DATA_DIR: dataDir });
    children.push(child);
    await eventually(
      () => output.stdout.includes('Ctrl-C'),
      START_TIMEOUT_MS,
      `lattice up to start (stderr: ${output.stderr})`,
    );
    const grpcAddress = /gRPC platform \(health\)\s+(\S+)/.exec(output.stdout)?.[1];
    const orchestratorAddress = /gRPC orchestrator\.v1 .*\s+(\S+)\n/.exec(output.stdout)?.[1];
    const httpBase = /HTTP \/healthz \/readyz \/metrics(?: \/models)?\s+(\S+)/.exec(output.stdout)?.[1];
    assert.ok(grpcAddress && httpBase && orchestratorAddress, output.stdout);
    assert.match(output.stdout, /Seeded the example model "catalog_ranker"/);
    assert.match(output.stdout, /vss consumers \(group vss-consumers, 8 partitions per topic\)/);

    // The vss demo was onboarded through the admin API and answers searches, each variant its members.
    assert.match(output.stdout, /Onboarded the vss demo: model catalog\/products \(1000 products\)/);
    const vssAddress = /gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/.exec(output.stdout)?.[1];
    assert.ok(vssAddress, output.stdout);
    const vss = new VssClient(vssAddress);
    try {
      for (const variant of ['all', 'shoes']) {
        const found = await vss.search({
          entity: 'catalog',
          modelName: 'products',
          variant,
          queries: [{ candidateId: 'c1', pageToken: '', filters: [] }],
          pageSize: 10,
          attributes: ['category'],
        });
        const candidates = found.results[0]!.candidates;
        assert.equal(candidates.length, 10, variant);
        if (variant === 'shoes') for (const c of candidates) assert.equal(c.attributes.category, 'shoes');
      }
    } finally {
      vss.close();
    }

    // Every command the banner prints works as printed (npx lattice = this clone's bin).
    const printed = [...output.stdout.matchAll(/^ {2}(npx lattice .*)$/gm)].map((m) => m[1]!);
    assert.equal(printed.length, 5, output.stdout);
    const shims = npxShim(mkdtempSync(join(tmpdir(), 'lattice-up-npx-')));
    const outputs = printed.map((command) => {
      const result = spawnSync('bash', ['-c', command], {
        env: { ...process.env, PATH: `${shims}:${process.env.PATH}`, LATTICE_LOG_LEVEL: 'warn' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(result.status, 0, `${command}:\n${result.stdout}\n${result.stderr}`);
      return result.stdout;
    });
    assert.match(outputs[0]!, /^ROW\s+.*FINAL_SCORE[\s\S]*\nc1\s[\s\S]*\nc2\s/);
    // Retrieval and ranking in one call (catalog_recommender): 10 products, each with its id.
    assert.equal(outputs[1]!.split('\n').filter((l) => /^c\d+\s+0\.\d+\s/.test(l)).length, 10, outputs[1]);
    assert.match(outputs[2]!, /catalog\s+products\s+shoes\s+READY/);
    assert.match(outputs[3]!, /catalog\s+products\s+all\s+READY/);
    const rows = outputs[4]!.split('\n').filter((l) => /^\d+\s/.test(l));
    assert.equal(rows.length, 10, outputs[4]);
    for (const row of rows) assert.match(row, /\sshoes\s/);

    // `lattice models` reads the config store beside the running stack (the file store takes no lock).
    // LOADED (its last reload) comes from the running orchestrator's GET /models.
    const models = spawnSync(process.execPath, [bin, 'models', '--json', '--address', httpBase], {
      env: { ...process.env, LATTICE_DATA_DIR: dataDir, LATTICE_LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(models.status, 0, models.stderr);
    const states = JSON.parse(models.stdout) as ModelConfigState[];
    assert.deepEqual(
      states.map((m) => [m.model_config_id, m.valid]),
      [
        ['catalog_ranker', true],
        ['catalog_recommender', true],
      ],
    );
    assert.ok(states[0]!.serving?.version, models.stdout);
    assert.ok(Date.parse(states[0]!.serving!.loaded_at!) <= Date.now(), models.stdout);

    // `lattice check` beside the running stack: the embedded adapters it holds report through its /readyz.
    const check = spawnSync(process.execPath, [bin, 'check'], {
      env: {
        ...process.env,
        LATTICE_DATA_DIR: dataDir,
        LATTICE_LOG_LEVEL: 'warn',
        LATTICE_METRICS_PORT: new URL(httpBase).port,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(check.status, 0, `${check.stdout}\n${check.stderr}`);
    for (const port of ['queue', 'sql', 'vectorDb'])
      assert.match(
        check.stdout,
        new RegExp(`^ok\\s+${port}\\s.*in use by process ${child.pid}; its http://.*/readyz says ok`, 'm'),
      );

    // `lattice featurestore load` writes into the feature store this stack serves (kept across a restart, below).
    const featureStoreAddress = /gRPC retrieve\.FeatureService .*\s+(\S+)\n/.exec(output.stdout)?.[1];
    assert.ok(featureStoreAddress, output.stdout);
    const shopRegistry = join(dataDir, 'shop-registry.yaml');
    writeFileSync(
      shopRegistry,
      'entities:\n  - name: shop\n    keys: [shop_id]\n    feature_groups:\n      - name: stats\n        features:\n          - { name: rating, data_type: FP32 }\n',
    );
    const shopsCsv = join(dataDir, 'shops.csv');
    writeFileSync(shopsCsv, 'shop_id,stats:rating\ns1,4.5\ns2,3.25\n');
    const load = spawnSync(
      process.execPath,
      [
        bin,
        'featurestore',
        'load',
        '--registry',
        shopRegistry,
        '--entity',
        'shop',
        '--address',
        featureStoreAddress,
        shopsCsv,
      ],
      {
        env: { ...process.env, LATTICE_DATA_DIR: dataDir, LATTICE_LOG_LEVEL: 'warn' },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.equal(load.status, 0, load.stderr);
    assert.match(load.stdout, /Loaded 2 shop rows from 1 file\(s\) into the feature store at /);

    // The seeded example answers a real request through the feature store, model server and compute server.
    const client = new OrchestratorClient(orchestratorAddress);
    try {
      const { targets } = await client.pointWise({
        modelConfigId: 'catalog_ranker',
        context: { user_id: 'u1' },
        targets: [{ id: 'c1' }, { id: 'c2' }],
        deadlineMs: 5000,
      });
      // Every seeded catalog item scores for a seeded user without a row error.
      const all = await client.pointWise({
        modelConfigId: 'catalog_ranker',
        context: { user_id: 'u7' },
        targets: Array.from({ length: 200 }, (_, i) => ({ id: `c${i + 1}` })),
        deadlineMs: 10_000,
      });
      assert.deepEqual(
        all.targets.filter((t) => t.error !== ''),
        [],
        'row errors on seeded targets',
      );
      for (const target of targets) {
        assert.equal(typeof target.values.final_score, 'number');
        assert.ok(
          (target.values.ctr as number) > 0 && (target.values.ctr as number) < 1,
          JSON.stringify(target),
        );
      }
    } finally {
      client.close();
    }

    assert.equal((await fetch(`${httpBase}/healthz`)).status, 200);
    const ready = await fetch(`${httpBase}/readyz`);
    const readiness = (await ready.json()) as { checks: Record<string, string> };
    assert.equal(ready.status, 200, JSON.stringify(readiness));
    assert.deepEqual(Object.keys(readiness.checks).sort(), [
      'cache',
      'compute',
      'configStore',
      'featurestore',
      'grpc',
      'modelserver',
      'orchestrator',
      'productionVectorDb',
      'queue',
      'servedIndex',
      'sql',
      'vectorDb',
      'vss-admin',
      'vss-serving',
    ]);
    // The banner's two predicts (catalog_ranker, catalog_recommender) and the two calls above.
    assert.match(
      await (await fetch(`${httpBase}/metrics`)).text(),
      /grpc_server_handled_total\{server="orchestrator",method="\/orchestrator\.v1\.Predict\/InferPointWise",code="OK"\} 4/,
    );
    assert.match(await (await fetch(`${httpBase}/metrics`)).text(), /process_cpu_seconds_total/);
    // The recommender's Searches went to vss serving in process (its LocalChannel): the orchestrator
    // counted them, and vss serving's listener counted only the three Searches made from outside
    // (the two variants above and the banner's `lattice vss search`).
    const scraped = await (await fetch(`${httpBase}/metrics`)).text();
    assert.match(scraped, /orchestrator_external_requests_total\{service="vss",[^}]*outcome="ok"\} [1-9]/);
    assert.match(
      scraped,
      /grpc_server_handled_total\{server="vss-serving",method="\/vss\.v1\.SimilaritySearch\/Search",code="OK"\} 3\n/,
    );

    assert.deepEqual(await healthCheck(grpcAddress, ''), { status: 'SERVING' });

    child.kill('SIGTERM');
    assert.equal(await exited, 0);

    // A second start on the same data directory serves the loaded entity and rows again.
    const again = startLattice(['up'], { LATTICE_DATA_DIR: dataDir });
    children.push(again.child);
    await eventually(
      () => again.output.stdout.includes('Ctrl-C'),
      START_TIMEOUT_MS,
      `lattice up to start again (stderr: ${again.output.stderr})`,
    );
    assert.match(again.output.stdout, /seeded demo data, 2 loaded rows/);
    const restartedStore = /gRPC retrieve\.FeatureService .*\s+(\S+)\n/.exec(again.output.stdout)?.[1];
    const features = new FeatureServiceClient(restartedStore!, grpc.credentials.createInsecure());
    try {
      const result = await new Promise<DecodedResult>((resolve, reject) =>
        features.retrieveDecodedResult(
          {
            entityLabel: 'shop',
            keysSchema: ['shop_id'],
            keys: [{ cols: ['s2'] }],
            featureGroups: [{ label: 'stats', featureLabels: ['rating'] }],
          },
          (err, answer) => (err ? reject(err) : resolve(answer)),
        ),
      );
      assert.deepEqual(result.rows[0]?.columns, ['3.25']);
    } finally {
      features.close();
    }
    again.child.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  test('lattice vss serving starts on embedded defaults, serves health and stops on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-vss-'));
    const { child, output, exited } = startLattice(['vss', 'serving', '--port', '0'], {
      LATTICE_DATA_DIR: dataDir,
    });
    children.push(child);
    await eventually(
      () => output.stdout.includes('Ctrl-C'),
      START_TIMEOUT_MS,
      `lattice vss serving to start (stderr: ${output.stderr})`,
    );
    const address = /vss\.v1\.SimilaritySearch gRPC \(health, reflection\)\s+(\S+)/.exec(output.stdout)?.[1];
    assert.ok(address, output.stdout);
    assert.deepEqual(await healthCheck(address, 'vss.v1.SimilaritySearch'), { status: 'SERVING' });
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });

  describe('against etcd, a config store other deployments share', { skip: etcdUrl === undefined }, () => {
    async function upOnEtcd(prefix: string, args: string[]) {
      const dataDir = mkdtempSync(join(tmpdir(), 'lattice-up-etcd-'));
      const started = startLattice(['up', ...args], {
        LATTICE_DATA_DIR: dataDir,
        LATTICE_CONFIG_STORE: 'etcd',
        LATTICE_ETCD_ENDPOINTS: etcdUrl!,
        LATTICE_ETCD_PREFIX: prefix,
      });
      children.push(started.child);
      await eventually(
        () => started.output.stdout.includes('Ctrl-C') || started.child.exitCode !== null,
        START_TIMEOUT_MS,
        `lattice up to start (stderr: ${started.output.stderr})`,
      );
      assert.match(started.output.stdout, /Ctrl-C/, started.output.stderr);
      started.child.kill('SIGTERM');
      assert.equal(await started.exited, 0, started.output.stderr);
      return started.output.stdout;
    }
    async function keysUnder(prefix: string): Promise<string[]> {
      const etcd = new Etcd3({ hosts: etcdUrl! });
      try {
        return await etcd.getAll().prefix(prefix).keys();
      } finally {
        etcd.close();
      }
    }

    test('does not seed the example model unless --seed-demo is given', async () => {
      const prefix = `/${uniqueName('lattice_up')}/`;
      const stdout = await upOnEtcd(prefix, []);
      assert.doesNotMatch(stdout, /Seeded the example model/);
      assert.match(stdout, /not seeded into etcd .*--seed-demo/);
      assert.deepEqual(await keysUnder(prefix), []);

      const seeded = await upOnEtcd(prefix, ['--seed-demo']);
      assert.match(seeded, /Seeded the example model "catalog_ranker"/);
      assert.ok((await keysUnder(prefix)).includes(`${prefix}models/catalog_ranker`));
    });
  });

  test('invalid settings stop it with a message naming the setting', async () => {
    const { child, output, exited } = startLattice(['up'], { LATTICE_QUEUE: 'kafka' });
    children.push(child);
    assert.equal(await exited, 1);
    assert.match(output.stderr, /queue\.kind \(from env LATTICE_QUEUE\)/);
  });

  test('an unknown command prints usage and exits 2', async () => {
    const { child, output, exited } = startLattice(['frobnicate'], {});
    children.push(child);
    assert.equal(await exited, 2);
    assert.match(output.stderr, /unknown command 'frobnicate'[\s\S]*Usage: lattice <command>/);
  });
});
