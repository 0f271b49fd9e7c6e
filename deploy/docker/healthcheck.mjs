#!/usr/bin/env node
// The container's health probe (Dockerfile HEALTHCHECK, compose healthchecks). The runtime image has no
// curl, so this is Node, using only what the image ships (node:http/https and @grpc/grpc-js).
//
//   node healthcheck.mjs                  GET /readyz on the ops port (LATTICE_METRICS_PORT, default 9464)
//   node healthcheck.mjs --http PORT [PATH]   GET PATH (default /readyz) on PORT
//   node healthcheck.mjs --grpc PORT      grpc.health.v1.Health/Check: the server must answer SERVING
//                                         (for `featurestore serve` and `modelserver`, which have no ops port)
//
// Exits 0 when healthy, 1 otherwise with the reason on stderr (docker inspect shows it). It probes
// 127.0.0.1 inside the container. With LATTICE_TLS_CERT set every Lattice server serves TLS only, so the
// probe speaks TLS then, presenting LATTICE_TLS_CLIENT_CERT / _KEY when set; it does not verify the
// server's certificate: it checks that this container's own server answers, not who it is. It reads
// those few variables itself because it runs beside the server, not inside it; a port set only in a
// settings file is passed as an argument.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';

const TIMEOUT_MS = 4000;
const env = process.env;
const tls = Boolean(env.LATTICE_TLS_CERT);
const clientCert =
  env.LATTICE_TLS_CLIENT_CERT && env.LATTICE_TLS_CLIENT_KEY
    ? { cert: readFileSync(env.LATTICE_TLS_CLIENT_CERT), key: readFileSync(env.LATTICE_TLS_CLIENT_KEY) }
    : undefined;

function fail(reason) {
  console.error(`unhealthy: ${reason}`);
  process.exit(1);
}

function portOf(text) {
  const port = Number(text);
  if (!/^\d+$/.test(text ?? '') || port < 1 || port > 65535) fail(`not a port: ${JSON.stringify(text)}`);
  return port;
}

function probeHttp(port, path) {
  const client = tls ? https : http;
  const request = client.get(
    {
      host: '127.0.0.1',
      port,
      path,
      timeout: TIMEOUT_MS,
      // SNI takes a host name, not an address; the certificate is not verified anyway.
      ...(tls ? { rejectUnauthorized: false, servername: 'localhost', ...clientCert } : {}),
    },
    (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () => {
        if (response.statusCode === 200) process.exit(0);
        fail(`${path} answered ${response.statusCode}: ${body.slice(0, 500)}`);
      });
    },
  );
  request.on('timeout', () => request.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
  request.on('error', (err) => fail(`${tls ? 'https' : 'http'}://127.0.0.1:${port}${path}: ${err.message}`));
}

async function probeGrpc(port) {
  // Loaded only here: the HTTP probe should not pay for loading gRPC.
  const grpc = await import('@grpc/grpc-js');
  const { service } = await import('grpc-health-check');
  const Health = grpc.makeGenericClientConstructor(service, 'Health');
  const credentials = tls
    ? grpc.credentials.createSsl(null, clientCert?.key ?? null, clientCert?.cert ?? null, {
        rejectUnauthorized: false,
        checkServerIdentity: () => undefined,
      })
    : grpc.credentials.createInsecure();
  // SNI takes a host name, not an address (the certificate is not verified anyway).
  const options = tls ? { 'grpc.ssl_target_name_override': 'localhost' } : {};
  const client = new Health(`127.0.0.1:${port}`, credentials, options);
  client.Check({ service: '' }, { deadline: Date.now() + TIMEOUT_MS }, (err, response) => {
    client.close();
    if (err) fail(`grpc.health.v1.Health/Check on 127.0.0.1:${port}: ${err.message}`);
    if (response.status !== 'SERVING') fail(`127.0.0.1:${port} is ${response.status}`);
    process.exit(0);
  });
}

const [mode, port, path] = process.argv.slice(2);
if (mode === undefined) probeHttp(portOf(env.LATTICE_METRICS_PORT || '9464'), '/readyz');
else if (mode === '--http') probeHttp(portOf(port), path ?? '/readyz');
else if (mode === '--grpc') await probeGrpc(portOf(port));
else fail(`usage: healthcheck.mjs [--http PORT [PATH] | --grpc PORT], got ${JSON.stringify(mode)}`);
