import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { demoRegistryDocument, generateDemoData, toColumnRecords } from '../../src/featurestore/index.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import { connect, query, retrieveDecoded } from './support.js';

const bin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'lattice-fs-cli-'));
const registryFile = join(dir, 'registry.yaml');
writeFileSync(registryFile, stringify(demoRegistryDocument()));

const { registry, rows } = generateDemoData({ seed: 3, users: 50, catalogs: 10, categories: 3 });
/** The demo users as CSV (vectors as quoted comma lists), plus `extra` raw lines at the end. */
function usersCsv(extra: string[] = []): string {
  const { columns, records } = toColumnRecords(registry, 'user', rows.user);
  const cell = (value: unknown) => (Array.isArray(value) ? `"${value.join(',')}"` : String(value));
  const lines = records.map((record) => columns.map((column) => cell(record[column])).join(','));
  const path = join(dir, `${uniqueName('users')}.csv`);
  writeFileSync(path, [columns.join(','), ...lines, ...extra].join('\n'));
  return path;
}

function lattice(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, LATTICE_LOG_LEVEL: 'warn', LATTICE_DATA_DIR: dir, ...env },
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

const children: ChildProcess[] = [];
after(() => {
  for (const child of children) child.kill('SIGKILL');
});

async function run(args: string[], env?: Record<string, string>) {
  const { child, output, exited } = lattice(args, env);
  children.push(child);
  return { code: await exited, ...output };
}

async function serve(args: string[], env?: Record<string, string>) {
  const { child, output, exited } = lattice(['featurestore', 'serve', '--port', '0', ...args], env);
  children.push(child);
  await eventually(
    () => output.stdout.includes('Ctrl-C') || child.exitCode !== null,
    60_000,
    'the feature store to start',
  );
  const address = /listening on (\S+)/.exec(output.stdout)?.[1];
  assert.ok(address, `stdout: ${output.stdout}\nstderr: ${output.stderr}`);
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  return { address, output, stop };
}

const userQuery = (keys: string[]) =>
  query(
    'user',
    ['user_id'],
    keys.map((key) => [key]),
    { profile: ['age', 'country'] },
  );
const expectedUser = (i: number) => [
  String(rows.user[i]?.values.profile?.age),
  String(rows.user[i]?.values.profile?.country),
];

describe('lattice featurestore', () => {
  test('load reports bad rows with their line, and progress on stderr (memory store: checks only)', async () => {
    const csv = usersCsv(['u51,not-a-number,IN,"1,2,3,4,5,6,7,8"', 'u52,33,IN,"1,2"']);
    const { code, stdout, stderr } = await run([
      'featurestore',
      'load',
      '--registry',
      registryFile,
      '--entity',
      'user',
      '--store',
      'memory',
      csv,
    ]);
    assert.equal(code, 0, stderr);
    assert.match(
      stdout,
      /Loaded 50 user rows from 1 file\(s\) into the memory store in [\d.]+ s; 2 bad row\(s\) skipped/,
    );
    assert.match(stderr, /bad row: .*\.csv:52: profile:age: expected a number for FP32, got "not-a-number"/);
    assert.match(
      stderr,
      /bad row: .*\.csv:53: profile:embedding: a FP32_VECTOR of dimension 8 needs 8 elements/,
    );
    assert.match(stderr, /users_.*\.csv: 52 rows in [\d.]+ s \([\d,]+ rows\/s\), 2 bad/);
  });

  test('load aborts past --max-bad-rows (exit 1); usage errors exit 2 with a message', async () => {
    const csv = usersCsv(['u51,x,IN,"1,2,3,4,5,6,7,8"']);
    const aborted = await run([
      'featurestore',
      'load',
      '--quiet',
      '--store',
      'memory',
      '--max-bad-rows',
      '0',
      '--registry',
      registryFile,
      '--entity',
      'user',
      csv,
    ]);
    assert.equal(aborted.code, 1);
    assert.match(
      aborted.stderr,
      /lattice: load of user aborted at .*\.csv:52: .*1 bad rows, more than the limit of 0/,
    );

    const missing = await run(['featurestore', 'load', '--entity', 'user', csv]);
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /required option '--registry <FILE>' not specified[\s\S]*Usage: lattice featurestore load/,
    );
    const unknownOption = await run(['featurestore', 'serve', '--colour', 'red']);
    assert.equal(unknownOption.code, 2);
    assert.match(unknownOption.stderr, /unknown option '--colour'/);
  });

  test('serve --load on the memory store answers over gRPC and stops on SIGTERM', async () => {
    const csv = usersCsv();
    const server = await serve(['--registry', registryFile, '--store', 'memory', '--load', `user=${csv}`]);
    assert.match(server.output.stdout, /Loaded 50 user rows from/);
    const client = connect(server.address);
    const result = await retrieveDecoded(client, userQuery(['u2', 'nobody', 'u1']));
    client.close();
    assert.deepEqual(
      result.rows.map((row) => row.columns),
      [expectedUser(1), [], expectedUser(0)],
    );
    assert.equal(await server.stop(), 0);
  });

  test('load --store server writes into a running feature store, registering the entity there', async () => {
    // The server starts on the demo registry under another name: the load brings "shopper" along.
    const shopperRegistry = join(dir, 'shopper-registry.yaml');
    const document = demoRegistryDocument();
    const user = document.entities.find((entity) => entity.name === 'user')!;
    writeFileSync(shopperRegistry, stringify({ entities: [{ ...user, name: 'shopper' }] }));
    const server = await serve([]);
    const csv = usersCsv(['u51,x,IN,"1,2,3,4,5,6,7,8"']);
    const load = (extra: string[]) =>
      run(['featurestore', 'load', '--registry', shopperRegistry, '--entity', 'shopper', ...extra, csv]);
    const loaded = await load(['--address', server.address]);
    assert.equal(loaded.code, 0, loaded.stderr);
    assert.match(loaded.stderr, /Registered shopper with the feature store at /);
    assert.match(
      loaded.stdout,
      new RegExp(
        `Loaded 50 shopper rows from 1 file\\(s\\) into the feature store at ${server.address.replace(/[.[\]]/g, '\\$&')} in [\\d.]+ s; 1 bad row\\(s\\) skipped`,
      ),
    );
    const client = connect(server.address);
    const result = await retrieveDecoded(
      client,
      query('shopper', ['user_id'], [['u2'], ['nobody']], { profile: ['age', 'country'] }),
    );
    client.close();
    assert.deepEqual(
      result.rows.map((row) => row.columns),
      [expectedUser(1), []],
    );
    assert.equal(await server.stop(), 0);
    // Nothing listens there any more: exit 1 saying what to start.
    const down = await load(['--address', server.address, '--quiet']);
    assert.equal(down.code, 1);
    assert.match(
      down.stderr,
      /no feature store answers at .*start "lattice up" or "lattice featurestore serve"/,
    );
  });

  test("serve without --port listens on the settings' featurestore.port, with featurestore.registry", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { child, output, exited } = lattice(['featurestore', 'serve', '--store', 'memory'], {
      LATTICE_FEATURESTORE_PORT: String(port),
      LATTICE_FEATURESTORE_REGISTRY: registryFile,
    });
    children.push(child);
    await eventually(
      () => output.stdout.includes('Ctrl-C') || child.exitCode !== null,
      60_000,
      'the feature store to start',
    );
    assert.match(
      output.stdout,
      new RegExp(`listening on 127\\.0\\.0\\.1:${port} \\(memory store; entities: user, catalog`),
    );
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });

  test('serve with no registry serves the seeded demo data', async () => {
    const server = await serve([]);
    assert.match(
      server.output.stdout,
      /Seeded demo rows: 100 user, 1000 catalog, 20 category, 2000 user_category/,
    );
    const client = connect(server.address);
    const result = await retrieveDecoded(
      client,
      query('catalog', ['catalog_id'], [['c1'], ['c1000'], ['c1001']], {
        stats: ['price'],
        attributes: ['category_id'],
      }),
    );
    client.close();
    assert.deepEqual(
      result.rows.map((row) => row.columns.length),
      [2, 2, 0],
    );
    assert.equal(await server.stop(), 0);
  });
});

const redisUrl = await realServer('redis');

describe('lattice featurestore on Redis', {
  skip: redisUrl === undefined ? 'Redis is not reachable' : false,
}, () => {
  const keyPrefix = `${uniqueName('lattice_fs_cli')}:`;
  const settingsFile = join(dir, 'settings.yaml');
  writeFileSync(settingsFile, stringify({ cache: { keyPrefix } }));
  const env = { LATTICE_REDIS_URL: redisUrl ?? '' };

  after(async () => {
    if (!redisUrl) return;
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${keyPrefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  test('load into Redis, then serve it (with --fill-defaults)', async () => {
    const csv = usersCsv();
    const loaded = await run(
      [
        'featurestore',
        'load',
        '--settings',
        settingsFile,
        '--registry',
        registryFile,
        '--entity',
        'user',
        '--store',
        'redis',
        '--quiet',
        csv,
      ],
      env,
    );
    assert.equal(loaded.code, 0, loaded.stderr);
    assert.match(loaded.stdout, /Loaded 50 user rows from 1 file\(s\) into the redis store/);

    const redis = new Redis(redisUrl!);
    assert.equal(await redis.exists(`${keyPrefix}fs:user:u7`), 1);
    await redis.quit();

    const server = await serve(
      ['--settings', settingsFile, '--registry', registryFile, '--store', 'redis', '--fill-defaults'],
      env,
    );
    assert.doesNotMatch(server.output.stdout, /Seeded/);
    const client = connect(server.address);
    const result = await retrieveDecoded(client, userQuery(['u50', 'nobody', 'u7']));
    client.close();
    assert.deepEqual(
      result.rows.map((row) => row.columns),
      [expectedUser(49), ['30', 'UNKNOWN'], expectedUser(6)],
    );
    assert.equal(await server.stop(), 0);
  });
});
