import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eventually } from '../../support/servers.js';
import { compute, numerixClient, stringRequest, stringScores } from './numerix-client.js';

const bin = fileURLToPath(new URL('../../../bin/lattice.js', import.meta.url));

describe('lattice compute', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-compute-cli-'));
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  function lattice(args: string[]) {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, LATTICE_DATA_DIR: dataDir, LATTICE_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
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

  test('compute put checks and stores an expression; a bad one is refused with the reason', async () => {
    // Independent processes: started together, since each pays the TypeScript loader's start-up.
    const stored = lattice(['compute', 'put', 'blend', 'a b +']);
    const refused = lattice(['compute', 'put', 'bad', 'a +']);
    const usage = lattice(['compute', 'put', 'lonely']);
    assert.equal(await stored.exited, 0, stored.output.stderr);
    assert.match(
      stored.output.stdout,
      /stored compute\/blend \(revision \d+\) in directory .*: a b \+ \(variables: a, b\)/,
    );

    assert.equal(await refused.exited, 1);
    assert.match(
      refused.output.stderr,
      /not stored: compute_id bad: operator \+ at token 2 needs 2 operands/,
    );

    assert.equal(await usage.exited, 2);
    assert.match(
      usage.output.stderr,
      /missing required argument 'expression'[\s\S]*Usage: lattice compute put/,
    );
  });

  test('compute serves the stored expressions over gRPC, picks up a new put live, and stops on SIGTERM', async () => {
    const server = lattice(['compute', '--port', '0', '--metrics-port', '0']);
    await eventually(
      () => server.output.stdout.includes('Ctrl-C'),
      60_000,
      `lattice compute to start (stderr: ${server.output.stderr})`,
    );
    assert.match(server.output.stdout, /1 expression under compute\//);
    const grpcPort = Number(
      /numerix\.Numerix gRPC \(health, reflection\)\s+[\d.]+:(\d+)/.exec(server.output.stdout)?.[1],
    );
    const httpBase = /HTTP \/healthz \/readyz \/metrics\s+(\S+)/.exec(server.output.stdout)?.[1];
    assert.ok(grpcPort > 0 && httpBase, server.output.stdout);

    const client = numerixClient(grpcPort);
    try {
      const request = stringRequest({ computeId: 'blend', schema: ['id', 'a', 'b'] }, [
        ['x1', '1', '2'],
        ['x2', '3', '4'],
      ]);
      assert.deepEqual(stringScores(await compute(client, request)), [
        ['x1', '3'],
        ['x2', '7'],
      ]);

      const changed = lattice(['compute', 'put', 'blend', 'a b *', '--data-type', 'fp32']);
      assert.equal(await changed.exited, 0, changed.output.stderr);
      await eventually(
        async () => stringScores(await compute(client, request))[1]?.[1] === '12',
        10_000,
        'the running server to serve the new expression',
      );
    } finally {
      client.close();
    }

    assert.equal((await fetch(`${httpBase}/readyz`)).status, 200);
    const metrics = await (await fetch(`${httpBase}/metrics`)).text();
    assert.match(metrics, /compute_requests_total\{compute_id="blend",outcome="ok"\}/);

    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0, server.output.stderr);
  });

  test('an unknown subcommand or option is refused with the usage (exit 2)', async () => {
    const unknown = lattice(['compute', 'frobnicate']);
    const badPort = lattice(['compute', '--port', 'http']);
    assert.equal(await unknown.exited, 2);
    assert.match(
      unknown.output.stderr,
      /unknown command 'frobnicate' \(the commands of 'compute': put\)[\s\S]*Usage: lattice compute/,
    );
    assert.equal(await badPort.exited, 2);
    assert.match(
      badPort.output.stderr,
      /'--port <N>' argument 'http' is invalid. It must be a port number from 0 to 65535/,
    );
  });
});
