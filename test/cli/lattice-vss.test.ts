/**
 * `lattice vss` (serving and consumers in one process) and `lattice vss consumers` as a user starts
 * them on embedded defaults: what they print, the consumers' metrics on /metrics, a second process on
 * the same data directory refused at once with the lock's message (no stack), SIGTERM exiting 0, and
 * the arguments each accepts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { runCaptured } from '../support/cli-capture.js';
import { type LatticeVssProcess, runLattice, startLatticeVss } from '../support/lattice-vss-process.js';

/** What /metrics of a process running the vss consumers shows from the start (issue 14, item 7). */
const CONSUMER_METRICS = [
  'vss_consumer_events_total',
  'vss_consumer_batch_seconds',
  'vss_consumer_lag',
  'vss_consumer_retries_total',
  'vss_consumer_dead_letters_total',
  'vss_ingestion_events_total',
  'vss_ingestion_jobs_completed_total',
  'vss_ingestion_job_events',
  'vss_embeddings_expired_total',
];

describe('lattice vss', () => {
  const dirs: string[] = [];
  const running: LatticeVssProcess[] = [];
  after(async () => {
    for (const child of running) await child.kill();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const dataDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-vss-cli-'));
    dirs.push(dir);
    return dir;
  };

  test('runs serving and consumers in one process; a second process on its data directory is refused', async () => {
    const dir = dataDir();
    const vss = await startLatticeVss({ command: 'vss', env: { LATTICE_DATA_DIR: dir } });
    running.push(vss);
    assert.match(vss.output(), /Lattice vss is up \(PGlite .*; in-process, journal .*; vector DB embedded/);
    assert.ok(vss.servingAddress, vss.output());
    assert.match(
      vss.output(),
      /vss consumers \(group vss-consumers, 8 partitions per topic\)\s+memory topics vss-embeddings, vss-realtime/,
    );

    const metrics = await (await fetch(`${vss.opsUrl}/metrics`)).text();
    for (const name of CONSUMER_METRICS) assert.match(metrics, new RegExp(`^# TYPE ${name} `, 'm'), name);
    assert.match(
      metrics,
      /^vss_consumer_lag\{topic="vss-embeddings",group="vss-consumers",partition="7"\} 0$/m,
    );
    assert.match(
      metrics,
      /^# TYPE grpc_server_handled_total /m,
      'the serving side reports on the same /metrics',
    );
    const ready = await fetch(`${vss.opsUrl}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(Object.keys(((await ready.json()) as { checks: object }).checks).sort(), [
      'productionVectorDb',
      'queue',
      'servedIndex',
      'sql',
      'vectorDb',
      'vss-admin',
      'vss-serving',
    ]);

    for (const command of [['vss', 'consumers'], ['vss', 'serving', '--port', '0'], ['vss']]) {
      const second = await runLattice(command, { LATTICE_DATA_DIR: dir });
      assert.equal(second.code, 1, `${command.join(' ')}: ${second.stderr}`);
      assert.match(
        second.stderr,
        /^lattice: vector database directory .* is in use by process \d+ .*run the vss components together in one process \(`lattice vss`\), or use a vector database server \(Qdrant/,
      );
      assert.doesNotMatch(second.stderr, /\n\s+at /, 'no stack trace');
    }

    assert.equal(await vss.stop(), 0, vss.output());
  });

  test('lattice vss consumers runs the consumers alone (on a share of the partitions) and stops on SIGTERM', async () => {
    const consumers = await startLatticeVss({
      command: 'vss consumers',
      args: ['--partitions', '0-2,5'],
      env: { LATTICE_DATA_DIR: dataDir() },
    });
    running.push(consumers);
    assert.match(consumers.output(), /Lattice vss consumers is up/);
    assert.match(
      consumers.output(),
      /vss consumers \(group vss-consumers, partitions 0,1,2,5 of 8 per topic\)/,
    );
    const metrics = await (await fetch(`${consumers.opsUrl}/metrics`)).text();
    assert.match(
      metrics,
      /^vss_consumer_lag\{topic="vss-realtime",group="vss-consumers",partition="5"\} 0$/m,
    );
    assert.doesNotMatch(
      metrics,
      /^vss_consumer_lag\{[^}]*partition="4"\}/m,
      'lag of its own partitions only',
    );
    assert.equal(consumers.servingAddress, undefined);
    assert.doesNotMatch(consumers.output(), /SimilaritySearch/);
    assert.equal(await consumers.stop(), 0, consumers.output());
  });

  test('rejects arguments that do not belong to the command: exit 2 with the usage, nothing started', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['consumers', '--port', '1'], /unknown option '--port'/],
      [
        ['consumers', '--metrics-port', 'x'],
        /'--metrics-port <N>' argument 'x' is invalid. It must be a port number/,
      ],
      [['--topic', 'x'], /unknown option '--topic'/],
      [['serving', 'extra'], /too many arguments for 'serving'/],
      [
        ['frobnicate'],
        /unknown command 'frobnicate' \(the commands of 'vss': serving, consumers, admin, replay,/,
      ],
      [['replay', '--metrics-port', '1'], /unknown option '--metrics-port'/],
      [['serving', '--partitions', '0-3'], /unknown option '--partitions'/],
      // Only `lattice vss` runs admin beside the others; each component alone has nothing to leave out.
      [['serving', '--no-admin'], /unknown option '--no-admin'/],
      [
        ['consumers', '--partitions', '3-1'],
        /argument '3-1' is invalid. It must be partition numbers and ranges/,
      ],
      [['--partitions', 'all'], /argument 'all' is invalid. It must be partition numbers and ranges/],
    ];
    for (const [argv, message] of cases) {
      const result = await runCaptured(['vss', ...argv]);
      assert.equal(result.exitCode, 2, argv.join(' '));
      assert.match(result.err, message);
      assert.match(result.err, /\n\nUsage: lattice vss/);
      assert.equal(result.out, '');
    }
  });
});
