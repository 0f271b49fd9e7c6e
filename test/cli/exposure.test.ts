/**
 * Secure by default: a server bound to a non-loopback address with no auth refuses to start, naming
 * the setting that configures auth and the one that allows it explicitly; the real CLI exits 1
 * before binding anything, and starts once auth or the explicit opt-out is set.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  checkExposure,
  type ExposedServer,
  embeddedQueueRoutes,
  isLoopbackHost,
} from '../../src/cli/exposure.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { eventually } from '../support/servers.js';

const bin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));
const grpc: ExposedServer = { name: 'orchestrator gRPC', auth: 'callerTokens' };
const admin: ExposedServer = { name: 'vss admin HTTP', auth: 'apiKeys' };
const bare: ExposedServer = { name: 'model server gRPC', auth: 'none' };

function refusal(env: Record<string, string>, servers: ExposedServer[]): string | undefined {
  try {
    checkExposure(loadSettings({ env }), servers);
    return undefined;
  } catch (err) {
    assert.ok(isLatticeError(err, 'FAILED_PRECONDITION'), String(err));
    return err.message;
  }
}

describe('exposure: no unauthenticated server on a non-loopback address', () => {
  test('loopback addresses are always allowed', () => {
    for (const host of ['127.0.0.1', '127.0.0.53', 'localhost', '::1', '::ffff:127.0.0.1']) {
      assert.ok(isLoopbackHost(host), host);
      assert.equal(refusal({ LATTICE_HOST: host }, [grpc, admin, bare]), undefined);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'lattice.internal'])
      assert.ok(!isLoopbackHost(host), host);
  });

  test('0.0.0.0 without auth is refused, naming each server, its setting and the opt-out', () => {
    const message = refusal({ LATTICE_HOST: '0.0.0.0' }, [grpc, admin]);
    assert.ok(message);
    assert.match(message, /refusing to serve on 0\.0\.0\.0/);
    assert.match(message, /orchestrator gRPC \(set auth\.callerTokens \(LATTICE_CALLER_TOKENS\)\)/);
    assert.match(message, /vss admin HTTP \(set vss\.admin\.apiKeys \(LATTICE_VSS_ADMIN_API_KEYS\)\)/);
    assert.match(message, /auth\.allowUnauthenticated: true \(LATTICE_ALLOW_UNAUTHENTICATED=true\)/);
  });

  test('auth on every server, required client certificates or the explicit opt-out let it start', () => {
    const tokens = { LATTICE_HOST: '0.0.0.0', LATTICE_CALLER_TOKENS: 'ranker:t0ken' };
    assert.equal(refusal(tokens, [grpc]), undefined);
    // Tokens do not cover the admin API, nor a server that takes none.
    assert.match(refusal(tokens, [grpc, admin]) ?? '', /vss admin HTTP/);
    assert.match(refusal(tokens, [grpc, bare]) ?? '', /model server gRPC \(no auth of its own\)/);
    assert.equal(
      refusal({ ...tokens, LATTICE_VSS_ADMIN_API_KEYS: 'admin-key-0123456789' }, [grpc, admin]),
      undefined,
    );
    assert.equal(
      refusal({ LATTICE_HOST: '::', LATTICE_ALLOW_UNAUTHENTICATED: 'true' }, [grpc, bare]),
      undefined,
    );
    assert.ok(refusal({ LATTICE_HOST: '::', LATTICE_ALLOW_UNAUTHENTICATED: 'false' }, [grpc]));
    const certs = loadSettings({
      env: { LATTICE_HOST: '0.0.0.0', LATTICE_TLS_CLIENT_AUTH: 'required' },
      overrides: { tls: { cert: 'c.pem', key: 'k.pem', clientCa: 'ca.pem' } },
    });
    assert.doesNotThrow(() => checkExposure(certs, [grpc, admin, bare]));
  });

  test('the embedded queue routes of the ops server count as a server with no auth of its own', () => {
    const env = {
      LATTICE_HOST: '0.0.0.0',
      LATTICE_CALLER_TOKENS: 'ranker:t0ken',
      LATTICE_VSS_ADMIN_API_KEYS: 'admin-key-0123456789',
    };
    const embedded = loadSettings({ env });
    assert.throws(
      () => checkExposure(embedded, [grpc, admin, ...embeddedQueueRoutes(embedded)]),
      /embedded-queue/,
    );
    const jetstream = loadSettings({ env: { ...env, LATTICE_QUEUE: 'jetstream' } });
    assert.doesNotThrow(() => checkExposure(jetstream, [grpc, admin, ...embeddedQueueRoutes(jetstream)]));
  });

  test('lattice vss on 0.0.0.0 with no auth exits 1 with the message; lattice compute starts with tokens', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-exposure-'));
    try {
      const env = { LATTICE_DATA_DIR: join(dir, 'data'), LATTICE_HOST: '0.0.0.0' };
      // Bounded: a lattice vss that starts instead of refusing is stopped and fails the test.
      const refused = spawnSync(process.execPath, [bin, 'vss'], {
        encoding: 'utf8',
        timeout: 90_000,
        env: {
          PATH: process.env.PATH,
          ...env,
          LATTICE_VSS_SERVING_PORT: '0',
          LATTICE_VSS_ADMIN_PORT: '0',
          LATTICE_METRICS_PORT: '0',
        },
      });
      assert.equal(refused.status, 1, refused.stdout + refused.stderr);
      assert.match(refused.stderr, /vss serving gRPC \(set auth\.callerTokens \(LATTICE_CALLER_TOKENS\)\)/);
      assert.match(refused.stderr, /vss admin HTTP/);
      assert.match(refused.stderr, /LATTICE_ALLOW_UNAUTHENTICATED=true/);

      const child = spawn(process.execPath, [bin, 'compute', '--port', '0'], {
        env: { PATH: process.env.PATH, ...env, LATTICE_CALLER_TOKENS: 'ranker:t0ken' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        output += d;
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        output += d;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        // The banner's lines may arrive in separate chunks, and the JSON log line before the banner
        // names the address too: wait for the banner and the address after it.
        await eventually(
          () => /Lattice compute is up[\s\S]*0\.0\.0\.0:\d+/.test(output) || child.exitCode !== null,
          60_000,
        );
        assert.match(output, /Lattice compute is up/);
        assert.match(output, /0\.0\.0\.0:\d+/);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
