/**
 * The TLS server name (SNI) outgoing gRPC channels and HTTPS requests send, as a server sees it: the
 * DNS name dialled or `serverName`, never an IP address (RFC 6066 allows none there; Node 26 refuses
 * to connect with one, Node 20–24 sent it with a DEP0123 warning). The certificate is still checked
 * against the address (tls-servers.test.ts checks that side).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { grpcChannelCredentials } from '../../../src/platform/grpc/index.js';
import { type ClientTls, fetchWithTls } from '../../../src/platform/http/index.js';
import { makeTestCertificates } from './certificates.js';

const certs = makeTestCertificates();
const ca = certs.pem(certs.ca);

describe('the TLS server name of outgoing connections', () => {
  let server: Http2SecureServer;
  let port: number;
  /** The server name of each connection the server accepted (`false`: none sent). */
  const seen: (string | false)[] = [];

  before(async () => {
    // Any request gets an empty 200: the gRPC calls fail on it, which does not matter here.
    server = createSecureServer(
      { cert: certs.pem(certs.serverCert), key: certs.pem(certs.serverKey), allowHTTP1: true },
      (_req, res) => res.end(),
    );
    server.on('secureConnection', (socket: TLSSocket) => seen.push(socket.servername ?? false));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** The server name the one connection of a gRPC call to `target` (`host`: on the server's port) sent. */
  async function grpcServerName(target: string, tls: ClientTls): Promise<string | false | undefined> {
    seen.length = 0;
    const client = new grpc.Client(
      target.includes(':') ? target : `${target}:${port}`,
      grpcChannelCredentials(tls),
    );
    try {
      await new Promise<void>((resolve) =>
        client.makeUnaryRequest(
          '/lattice.Test/Call',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          { deadline: Date.now() + 5000 },
          () => resolve(),
        ),
      );
    } finally {
      client.close();
    }
    assert.equal(seen.length, 1, `one connection to ${target}`);
    return seen[0];
  }

  async function httpsServerName(host: string, tls: ClientTls): Promise<string | false | undefined> {
    seen.length = 0;
    const response = await fetchWithTls(tls)(`https://${host}:${port}/`, { method: 'GET', headers: {} });
    assert.equal(response.status, 200);
    assert.equal(seen.length, 1, `one connection to ${host}`);
    return seen[0];
  }

  test('gRPC: the host dialled when it is a name, none for an address, else serverName', async () => {
    assert.equal(await grpcServerName('127.0.0.1', { ca }), false);
    assert.equal(await grpcServerName('localhost', { ca }), 'localhost');
    assert.equal(await grpcServerName('127.0.0.1', { ca, serverName: 'localhost' }), 'localhost');
    assert.equal(await grpcServerName('localhost', { ca, serverName: '127.0.0.1' }), 'localhost');
  });

  test('gRPC through an HTTP CONNECT proxy: the host beyond the proxy', async () => {
    const connected: string[] = [];
    const proxy = createServer().on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      connected.push(req.url ?? '');
      const url = new URL(`http://${req.url}`);
      const upstream = connect(Number(url.port), '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    // grpc-js takes its proxy from the environment when a channel is made.
    const saved = { grpc_proxy: process.env.grpc_proxy, no_grpc_proxy: process.env.no_grpc_proxy };
    process.env.grpc_proxy = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    process.env.no_grpc_proxy = 'nothing.invalid';
    try {
      assert.equal(await grpcServerName('localhost', { ca }), 'localhost');
      assert.equal(await grpcServerName('127.0.0.1', { ca }), false);
      assert.deepEqual(connected, [`localhost:${port}`, `127.0.0.1:${port}`]);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  test('gRPC over a Unix socket: localhost, as grpc-js names it', async () => {
    const path = join(certs.dir, 'grpc.sock');
    // The same TLS server, its connections arriving through the socket.
    const unix = createNetServer((socket) => server.emit('connection', socket));
    await new Promise<void>((resolve) => unix.listen(path, resolve));
    try {
      assert.equal(await grpcServerName(`unix:${path}`, { ca }), 'localhost');
    } finally {
      await new Promise((resolve) => unix.close(resolve));
    }
  });

  test('HTTPS: the same, with serverName an address', async () => {
    assert.equal(await httpsServerName('127.0.0.1', { ca }), false);
    assert.equal(await httpsServerName('localhost', { ca }), 'localhost');
    assert.equal(await httpsServerName('127.0.0.1', { ca, serverName: 'localhost' }), 'localhost');
    assert.equal(await httpsServerName('localhost', { ca, serverName: '127.0.0.1' }), 'localhost');
  });

  test('a client certificate without its key, or a key without its certificate, is INVALID_ARGUMENT', () => {
    const cert = certs.pem(certs.clientCert);
    const key = certs.pem(certs.clientKey);
    for (const [tls, field] of [
      [{ ca, cert }, 'tls.key'],
      [{ ca, key }, 'tls.cert'],
    ] as const) {
      assert.throws(
        () => grpcChannelCredentials(tls),
        (err: unknown) => isLatticeError(err) && err.code === 'INVALID_ARGUMENT' && err.field === field,
      );
    }
  });
});
