/**
 * Every command that opens a server, run by the binary with that server down (each adapter pointed
 * at a closed port): exit 1, one message on stderr naming what did not answer and saying what to do,
 * no stack trace, nothing started. predict, search and the vss admin clients have theirs beside their
 * success paths, `lattice models` in models-cli.test.ts. Also `lattice check`, which reports every
 * adapter on its own line, down or up, and `lattice settings` refusing an invalid setting.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { stringify } from 'yaml';
import { demoRegistryDocument } from '../../src/featurestore/index.js';
import { FREE_PORTS, latticeBin } from '../support/lattice-up-process.js';
import { realServer, serverUrls } from '../support/servers.js';

/** Every adapter on a server that is not there. */
const DOWN: Readonly<Record<string, string>> = {
  LATTICE_CONFIG_STORE: 'etcd',
  LATTICE_ETCD_ENDPOINTS: 'http://127.0.0.1:1',
  LATTICE_QUEUE: 'jetstream',
  LATTICE_NATS_SERVERS: 'nats://127.0.0.1:1',
  LATTICE_SQL: 'postgres',
  LATTICE_POSTGRES_URL: 'postgres://postgres@127.0.0.1:1/lattice',
  LATTICE_CACHE: 'redis',
  LATTICE_REDIS_URL: 'redis://127.0.0.1:1',
  LATTICE_VSS_VECTOR_DB: 'qdrant',
  LATTICE_QDRANT_URL: 'http://127.0.0.1:1',
};

const dir = mkdtempSync(join(tmpdir(), 'lattice-down-'));
const registry = join(dir, 'registry.yaml');
writeFileSync(registry, stringify(demoRegistryDocument()));

function lattice(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Only the variables given here decide the settings: the test's own LATTICE_* must not.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('LATTICE_')),
  );
  const child = spawn(process.execPath, [latticeBin, ...args], {
    env: {
      ...inherited,
      ...FREE_PORTS,
      LATTICE_DATA_DIR: mkdtempSync(join(dir, 'data-')),
      LATTICE_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** Runs `each` over `items`, `width` at a time (each case is a Node process loading the CLI). */
async function inBatches<T>(
  items: readonly T[],
  width: number,
  each: (item: T) => Promise<void>,
): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) await each(next);
    }),
  );
}

/** What each command says about the server it could not reach. */
const NAMES_THE_SERVER =
  /^lattice: .*(etcd at http:\/\/127\.0\.0\.1:1|NATS JetStream at nats:\/\/127\.0\.0\.1:1|PostgreSQL at 127\.0\.0\.1:1|Redis at 127\.0\.0\.1:1|Qdrant at http:\/\/127\.0\.0\.1:1)/;

describe('commands with their server down', () => {
  test('exit 1 with a message naming the server and what to do, no stack trace', {
    timeout: 180_000,
  }, async () => {
    const cases: string[][] = [
      ['up'],
      ['orchestrator'],
      ['compute'],
      ['compute', 'put', 'blend', 'a b +'],
      ['featurestore', 'serve', '--store', 'redis'],
      ['featurestore', 'load', '--registry', registry, '--entity', 'user', join(dir, 'users.csv')],
      ['logs', 'decode', '--from-queue', 'inference-logs'],
      ['vss'],
      ['vss', 'serving'],
      ['vss', 'consumers'],
      ['vss', 'admin'],
      ['vss', 'replay'],
    ];
    const failures: string[] = [];
    await inBatches(cases, 3, async (args) => {
      const result = await lattice(args, DOWN);
      const what = `lattice ${args.join(' ')} (exit ${result.code}):\n${result.stdout}${result.stderr}`;
      if (
        result.code !== 1 ||
        !NAMES_THE_SERVER.test(result.stderr) ||
        !/Is it running\? Start it, or point the settings at where it runs/.test(result.stderr) ||
        /\n\s+at /.test(result.stderr) ||
        /is up|listening on|Ctrl-C/.test(result.stdout)
      ) {
        failures.push(what);
      }
    });
    assert.deepEqual(failures, []);
  });

  test('lattice check reports every adapter it could not open, one line each, exit 1', {
    timeout: 60_000,
  }, async () => {
    const result = await lattice(['check'], DOWN);
    assert.equal(result.code, 1, result.stderr);
    const lines = result.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => line.split(/\s+/).slice(0, 2).join(' ')),
      ['FAILED configStore', 'FAILED queue', 'FAILED sql', 'FAILED cache', 'FAILED vectorDb'],
    );
    assert.match(lines[2]!, /PostgreSQL postgres:\/\/\*\*\*@127\.0\.0\.1:1\/lattice: .*unavailable/);

    // --json: the same results for scripts.
    const json = await lattice(['check', '--json'], DOWN);
    assert.equal(json.code, 1, json.stderr);
    const results = JSON.parse(json.stdout) as { port: string; ok: boolean; error?: string }[];
    assert.deepEqual(
      results.map((r) => [r.port, r.ok]),
      [
        ['configStore', false],
        ['queue', false],
        ['sql', false],
        ['cache', false],
        ['vectorDb', false],
      ],
    );
    assert.match(results[2]!.error!, /unavailable/);
  });

  test('lattice settings refuses an invalid setting, naming it and where it came from', async () => {
    const result = await lattice(['settings'], { LATTICE_QUEUE: 'kafka' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^lattice: invalid settings:\n {2}- queue\.kind \(from env LATTICE_QUEUE\)/);
    assert.equal(result.stdout, '');
  });
});

const [postgres, redis, nats] = await Promise.all([
  realServer('postgres'),
  realServer('redis'),
  realServer('nats'),
]);

describe('lattice check with every server up', { skip: !(postgres && redis && nats) }, () => {
  test('one "ok" line per adapter, exit 0', { timeout: 60_000 }, async () => {
    const result = await lattice(['check'], {
      LATTICE_QUEUE: 'jetstream',
      LATTICE_NATS_SERVERS: serverUrls.nats,
      LATTICE_SQL: 'postgres',
      LATTICE_POSTGRES_URL: serverUrls.postgres,
      LATTICE_CACHE: 'redis',
      LATTICE_REDIS_URL: serverUrls.redis,
    });
    assert.equal(result.code, 0, `${result.stdout}${result.stderr}`);
    const lines = result.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => line.split(/\s+/).slice(0, 2).join(' ')),
      ['ok configStore', 'ok queue', 'ok sql', 'ok cache', 'ok vectorDb'],
    );
    assert.match(lines[1]!, /NATS JetStream nats:\/\/.* \(\d+ ms\)$/);
  });
});
