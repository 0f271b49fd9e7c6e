/**
 * The CLI speaks one dialect: every command names the server it talks to `--address` (the names
 * before it, `--ops-url`, `--url` and search's `--target`, and predict's `--target` for a target id,
 * still work, hidden, each with a one-line warning); `--version` prints the package's version; an
 * option that takes one of a fixed set of values lists them in its help; and a mistake in the command
 * line (a malformed address, a value outside the set, a malformed or out-of-range number) is a usage
 * error, exit 2 naming the option, before anything is dialled.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Command } from 'commander';
import { createProgram } from '../../src/cli/program.js';
import { runCaptured } from '../support/cli-capture.js';
import { closedPort } from '../support/closed-port.js';
import { latticeBin } from '../support/lattice-up-process.js';

/** A program whose stderr is captured, and the command at `path` in it. */
function programAt(path: readonly string[]): { command: Command; stderr: () => string } {
  let err = '';
  const program = createProgram({
    io: {
      stdout: { write: () => true },
      stderr: {
        write: (text: string) => {
          err += text;
          return true;
        },
      },
      onInterrupt: () => () => {},
    },
    exitCode: 0,
  });
  let command: Command = program;
  for (const name of path) command = command.commands.find((sub) => sub.name() === name)!;
  assert.ok(command, path.join(' '));
  return { command, stderr: () => err };
}

/** Every command of the tree with its path. */
function commands(command: Command, path: string[] = []): [string[], Command][] {
  return command.commands.flatMap((sub): [string[], Command][] => {
    const at = [...path, sub.name()];
    return [[at, sub], ...commands(sub, at)];
  });
}

const tree = commands(programAt([]).command);

describe('lattice --version', () => {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };

  test('prints the version of package.json, exit 0, in process and from the binary', async () => {
    for (const flag of ['--version', '-V']) {
      const result = await runCaptured([flag]);
      assert.equal(result.exitCode, 0, flag);
      assert.equal(result.out, version);
      assert.equal(result.err, '');
    }
    const bin = spawnSync(process.execPath, [latticeBin, '--version'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(bin.status, 0, bin.stderr);
    assert.equal(bin.stdout, `${version}\n`);
  });
});

describe('--address', () => {
  const withAddress = tree.filter(([, command]) => command.options.some((o) => o.long === '--address'));

  test('is how every command that talks to a server names it; the old names are not in any help', () => {
    const names = withAddress.map(([path]) => path.join(' '));
    for (const expected of [
      'models',
      'predict',
      'search',
      'featurestore load',
      'vss publish',
      'vss dead-letters',
      'vss register-store',
      'vss reset',
      'vss status',
      'vss models',
    ]) {
      assert.ok(names.includes(expected), `${expected} in ${names.join(', ')}`);
    }
    for (const [path, command] of tree) {
      const shown = command.options.filter((o) => !o.hidden).map((o) => o.long);
      for (const old of ['--url', '--ops-url', '--target']) {
        assert.ok(!shown.includes(old), `${path.join(' ')} shows ${old}`);
      }
    }
  });

  test('a malformed address is a usage error of each such command: exit 2 naming --address, nothing run', async () => {
    for (const [path] of withAddress) {
      for (const bad of ['nowhere', 'host:99999', 'ftp://host:1']) {
        const result = await runCaptured([...path, '--address', bad]);
        const what = `lattice ${path.join(' ')} --address ${bad}`;
        assert.equal(result.exitCode, 2, `${what}: ${result.err}`);
        assert.match(
          result.err,
          new RegExp(`^lattice: option '--address <ADDRESS>' argument '${bad}' is invalid\\. `),
          what,
        );
        assert.equal(result.out, '', what);
      }
    }
    // gRPC has no path after the port; an HTTP server's base URL may have one.
    const path = await runCaptured(['search', '--address', 'https://vss.internal:443/api']);
    assert.equal(path.exitCode, 2);
    assert.match(path.err, /A gRPC address has no path or query after the port\./);
  });

  test('the old names still set it, with one line of warning on stderr', () => {
    const cases: [string[], string, string, unknown][] = [
      [['models'], '--ops-url', 'http://127.0.0.1:9101', 'address'],
      [['vss', 'publish'], '--ops-url', '127.0.0.1:9101', 'address'],
      [['vss', 'dead-letters'], '--ops-url', 'https://ops.internal', 'address'],
      [['vss', 'reset'], '--url', 'http://127.0.0.1:8090', 'address'],
      [['vss', 'models'], '--url', 'http://127.0.0.1:8090', 'address'],
      [['search'], '--target', '127.0.0.1:50055', 'address'],
      [['predict'], '--target', 'c1:price=2', 'targetId'],
    ];
    for (const [path, old, value, attribute] of cases) {
      const { command, stderr } = programAt(path);
      command.parseOptions([old, value, old, value]);
      const expected = attribute === 'targetId' ? [value, value] : value;
      assert.deepEqual(command.opts()[attribute as string], expected, `${path.join(' ')} ${old}`);
      const current = attribute === 'targetId' ? '--target-id' : '--address';
      assert.equal(stderr(), `lattice: ${old} is deprecated and will be removed; use ${current}\n`);
    }
    // predict's --target-id and its old name together: one list of targets, in order.
    const { command } = programAt(['predict']);
    command.parseOptions(['--target-id', 'c1', '--target', 'c2', '--target-id', 'c3']);
    assert.deepEqual(command.opts().targetId, ['c1', 'c2', 'c3']);
  });

  test('an old name from the binary: the command runs against it, after the warning', async () => {
    const port = await closedPort();
    const search = spawnSync(
      process.execPath,
      [latticeBin, 'search', '--entity', 'e', '--model', 'm', '--id', 'x', '--target', `127.0.0.1:${port}`],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(search.status, 1, search.stderr);
    const [warning, failure] = search.stderr.split('\n');
    assert.equal(warning, 'lattice: --target is deprecated and will be removed; use --address');
    assert.match(failure!, new RegExp(`^lattice: vss serving is not reachable at 127\\.0\\.0\\.1:${port} `));
  });
});

describe('options with a fixed set of values', () => {
  const FIXED: [string[], string, string[]][] = [
    [['compute', 'put'], '--data-type', ['fp32', 'fp64']],
    [['featurestore', 'serve'], '--store', ['memory', 'redis']],
    [['featurestore', 'load'], '--store', ['server', 'redis', 'memory']],
    [['featurestore', 'load'], '--format', ['csv', 'jsonl', 'parquet']],
    [['logs', 'decode'], '--format', ['jsonl', 'parquet']],
    [['predict'], '--kind', ['point', 'pair', 'slate']],
    [['vss', 'reset'], '--model-type', ['RESET', 'DELTA']],
    [['vss', 'reset'], '--frequency', ['FREQ_1H', 'FREQ_3H', 'FREQ_6H', 'FREQ_1D', 'FREQ_1W']],
    [['vss', 'register-variant'], '--vectordb-type', ['EMBEDDED', 'QDRANT', 'PGVECTOR']],
    [['vss', 'register-variant'], '--job-frequency', ['FREQ_1H', 'FREQ_3H', 'FREQ_6H', 'FREQ_1D', 'FREQ_1W']],
  ];

  test('list their values in the help and refuse any other: exit 2 naming the option', async () => {
    for (const [path, flag, values] of FIXED) {
      const what = `lattice ${path.join(' ')} ${flag}`;
      const help = await runCaptured([...path, '--help']);
      const line = help.out.replace(/\n {6,}/g, ' ').match(new RegExp(`^ +${flag} .*$`, 'm'))?.[0];
      assert.ok(line?.includes(`(choices: ${values.map((v) => `"${v}"`).join(', ')}`), `${what}: ${line}`);
      const bad = await runCaptured([...path, flag, 'nope']);
      assert.equal(bad.exitCode, 2, what);
      assert.match(
        bad.err,
        new RegExp(
          `^lattice: option '${flag} <\\w+>' argument 'nope' is invalid\\. Allowed choices are ${values.join(', ')}\\.`,
        ),
        what,
      );
    }
    // compute put takes the precision as the expression document does: any case, f32 / f64 too.
    const dataType = programAt(['compute', 'put']).command.options.find((o) => o.long === '--data-type')!;
    assert.deepEqual(
      ['FP32', 'f64', 'fp32'].map((text) => dataType.parseArg!(text, undefined)),
      ['fp32', 'fp64', 'fp32'],
    );
  });
});

describe('usage errors before any network call', () => {
  /** A TCP server that counts the connections made to it. */
  let server: Server;
  let connections = 0;
  let port = 0;
  before(async () => {
    server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('exit 2 naming the option; the server never sees a connection', async () => {
    const grpc = `127.0.0.1:${port}`;
    const http = `http://127.0.0.1:${port}`;
    const cases: [string[], RegExp][] = [
      [
        [
          'predict',
          '--model-config',
          'm',
          '--target-id',
          'c1',
          '--schema',
          'price=FLOAT99',
          '--address',
          grpc,
        ],
        /^lattice: option '--schema <name=TYPE>' argument 'price=FLOAT99' is invalid\. It must be name=TYPE, TYPE one of FP8E5M2, /,
      ],
      [
        ['predict', '--model-config', 'm', '--target-id', 'c1', '--deadline-ms', '5s', '--address', grpc],
        /^lattice: option '--deadline-ms <N>' argument '5s' is invalid\. It must be a positive integer\./,
      ],
      [
        ['search', '--entity', 'e', '--model', 'm', '--id', 'x', '--page-size', '5000', '--address', grpc],
        /^lattice: option '--page-size <N>' argument '5000' is invalid\. It must be an integer from 1 to 1000\./,
      ],
      [
        ['vss', 'reset', '--entity', 'e', '--model', 'm', '--model-type', 'FULL', '--address', http],
        /^lattice: option '--model-type <TEXT>' argument 'FULL' is invalid\. Allowed choices are RESET, DELTA\./,
      ],
      [
        ['vss', 'register-store', '--store-id', '1.5', '--entity', 'e', '--address', http],
        /^lattice: option '--store-id <N>' argument '1\.5' is invalid\. It must be an integer\./,
      ],
      [
        [
          'featurestore',
          'load',
          '--registry',
          'r.yaml',
          '--entity',
          'e',
          '--batch-size',
          '-1',
          '--address',
          grpc,
          'f.csv',
        ],
        /^lattice: option '--batch-size <N>' argument '-1' is invalid\. It must be a whole number\./,
      ],
      [
        ['models', '--address', 'localhost'],
        /^lattice: option '--address <ADDRESS>' argument 'localhost' is invalid\. It must be HOST:PORT or an http:\/\/ or https:\/\/ URL\./,
      ],
    ];
    for (const [argv, message] of cases) {
      const result = await runCaptured(argv);
      const what = `lattice ${argv.join(' ')}`;
      assert.equal(result.exitCode, 2, `${what}: ${result.err}`);
      assert.match(result.err, message, what);
      assert.match(result.err, /\n\nUsage: lattice /, what);
      assert.equal(result.out, '', what);
    }
    assert.equal(connections, 0, 'no command dialled');
  });
});
