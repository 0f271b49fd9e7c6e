/**
 * deploy/docker/healthcheck.mjs, the image's health probe, run as Docker runs it (a Node process, its
 * exit code the verdict) against real Lattice servers: the platform's HTTP ops server (/readyz) and
 * gRPC server (grpc.health.v1), in plaintext and in TLS with client certificates required.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { GrpcServer } from '../../src/platform/grpc/index.js';
import { HttpServer, loadTls, type ServerTls } from '../../src/platform/http/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { makeTestCertificates } from '../platform/tls/certificates.js';
import { root } from './support/deploy-files.js';

const logger = createLogger('healthcheck-test', { level: 'silent' });
const script = join(root, 'deploy/docker/healthcheck.mjs');

async function probe(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('LATTICE_')),
  );
  const child = spawn(process.execPath, [script, ...args], {
    env: { ...base, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stderr };
}

function opsServer(ready: () => Promise<void>, tls?: ServerTls): HttpServer {
  return new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger,
    metrics: new Metrics(),
    readiness: { sql: ready },
    tls: tls ?? false,
  });
}

describe('the container health probe', () => {
  const stops: (() => Promise<void>)[] = [];
  after(async () => {
    for (const stop of stops) await stop();
  });

  test('/readyz on LATTICE_METRICS_PORT: healthy when every check answers, not when one fails', async () => {
    let failing = false;
    const ops = opsServer(async () => {
      if (failing) throw new Error('sql: connection refused');
    });
    const port = await ops.start();
    stops.push(() => ops.stop());
    assert.deepEqual(await probe([], { LATTICE_METRICS_PORT: String(port) }), { code: 0, stderr: '' });
    assert.equal((await probe(['--http', String(port)])).code, 0);
    failing = true;
    const unready = await probe([], { LATTICE_METRICS_PORT: String(port) });
    assert.equal(unready.code, 1);
    assert.match(unready.stderr, /\/readyz answered 503: .*sql: connection refused/);
  });

  test('nothing listening, or a bad argument, is unhealthy', async () => {
    const ops = opsServer(async () => {});
    const port = await ops.start();
    await ops.stop();
    const closed = await probe(['--http', String(port)]);
    assert.equal(closed.code, 1);
    assert.match(closed.stderr, /ECONNREFUSED/);
    assert.equal((await probe(['--grpc', String(port)])).code, 1);
    assert.match((await probe(['--grpc', 'x'])).stderr, /not a port/);
    assert.match((await probe(['--tcp', '1'])).stderr, /usage/);
  });

  test('--grpc PORT: healthy while the gRPC server serves, not once it stops', async () => {
    const server = new GrpcServer({
      name: 'featurestore',
      host: '127.0.0.1',
      port: 0,
      logger,
      metrics: new Metrics(),
      tls: false,
    });
    const port = await server.start();
    assert.deepEqual(await probe(['--grpc', String(port)]), { code: 0, stderr: '' });
    await server.stop(0);
    const stopped = await probe(['--grpc', String(port)]);
    assert.equal(stopped.code, 1);
    assert.match(stopped.stderr, /grpc\.health\.v1\.Health\/Check/);
  });

  test('with LATTICE_TLS_CERT it speaks TLS, presenting the client certificate the servers require', async () => {
    const certs = makeTestCertificates();
    const tls = loadTls({
      cert: certs.serverCert,
      key: certs.serverKey,
      clientCa: certs.ca,
      clientAuth: 'required',
      outgoing: 'auto',
    }).server!;
    const ops = opsServer(async () => {}, tls);
    const grpc = new GrpcServer({
      name: 'modelserver',
      host: '127.0.0.1',
      port: 0,
      logger,
      metrics: new Metrics(),
      tls,
    });
    const [httpPort, grpcPort] = [await ops.start(), await grpc.start()];
    stops.push(
      () => ops.stop(),
      () => grpc.stop(0),
    );
    const env = {
      LATTICE_TLS_CERT: certs.serverCert,
      LATTICE_TLS_CLIENT_CERT: certs.clientCert,
      LATTICE_TLS_CLIENT_KEY: certs.clientKey,
    };
    assert.deepEqual(await probe([], { ...env, LATTICE_METRICS_PORT: String(httpPort) }), {
      code: 0,
      stderr: '',
    });
    assert.deepEqual(await probe(['--grpc', String(grpcPort)], env), { code: 0, stderr: '' });
    // Without the client certificate the server refuses the probe.
    const anonymous = await probe(['--http', String(httpPort)], { LATTICE_TLS_CERT: certs.serverCert });
    assert.equal(anonymous.code, 1);
  });
});
