/**
 * TLS on every server and client, in one process with certificates made by openssl here: the
 * orchestrator stack (orchestrator, feature store, model server, compute, all GrpcServers serving the
 * process's default TLS) answered through OrchestratorClient and the orchestrator's downstream
 * clients; HttpServer over https through the CLI's admin client; a client trusting another CA, a
 * plaintext client, and (with client certificates required) a client without one are refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { CATALOG_RANKER_ID } from '../../../examples/catalog-ranker.js';
import { AdminClient, AdminUnreachableError } from '../../../src/cli/vss-admin/admin-client.js';
import { type RunningOrchestrator, startOrchestrator } from '../../../src/orchestrator/api/index.js';
import { OrchestratorClient } from '../../../src/orchestrator/client.js';
import { createOrchestratorClients } from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { createCache } from '../../../src/platform/cache/index.js';
import { GrpcServer, grpcChannelCredentials } from '../../../src/platform/grpc/index.js';
import {
  type ClientAuth,
  type ClientTls,
  fetchWithTls,
  HttpServer,
  loadTls,
  type ServerTls,
  serveTlsByDefault,
  type TlsMaterial,
} from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { type ReferenceServers, startReferenceServers } from '../../support/stack.js';
import { makeTestCertificates, type TestCertificates } from './certificates.js';

const healthProto = fileURLToPath(
  new URL('../../../node_modules/grpc-health-check/proto/health/v1/health.proto', import.meta.url),
);
const HealthClient = (
  grpc.loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  }
).grpc.health.v1.Health;

const logger = createLogger('tls-test', { level: 'silent' });
const certs: TestCertificates = makeTestCertificates();

function tlsSettings(overrides: Partial<Parameters<typeof loadTls>[0]> = {}): Parameters<typeof loadTls>[0] {
  return {
    cert: certs.serverCert,
    key: certs.serverKey,
    ca: certs.ca,
    clientAuth: 'off',
    outgoing: 'auto',
    ...overrides,
  };
}

/** A health check over `credentials`: the status, or the error's gRPC code. */
async function health(target: string, credentials: grpc.ChannelCredentials): Promise<string> {
  const client = new HealthClient(target, credentials);
  try {
    return await new Promise<string>((resolve) =>
      (
        client as unknown as {
          check(r: object, o: object, cb: (e: grpc.ServiceError | null, r: { status: string }) => void): void;
        }
      ).check({ service: '' }, { deadline: Date.now() + 5000 }, (err, res) =>
        resolve(err ? grpc.status[err.code] : res.status),
      ),
    );
  } finally {
    client.close();
  }
}

describe('TLS across the orchestrator stack', () => {
  let material: TlsMaterial;
  let servers: ReferenceServers;
  let orchestrator: RunningOrchestrator;
  let downstream: ReturnType<typeof createOrchestratorClients>;
  let cache: Awaited<ReturnType<typeof createCache>>;
  const metrics = new Metrics();

  before(async () => {
    material = loadTls(tlsSettings());
    // What the composition root does at start-up: every server of the process serves TLS.
    serveTlsByDefault(material.server);
    servers = await startReferenceServers({ users: 5, catalogs: 12 });
    downstream = createOrchestratorClients({
      metrics,
      featureStoreTarget: servers.targets.featureStore,
      credentials: grpcChannelCredentials(material.client),
    });
    cache = await createCache({ kind: 'memory' });
    orchestrator = await startOrchestrator({
      host: '127.0.0.1',
      port: 0,
      store: servers.config,
      buildComponent: createComponentBuilder({ ...downstream, featureCache: { cache, metrics } }),
      logger,
      metrics,
    });
  });
  after(async () => {
    serveTlsByDefault(undefined);
    await orchestrator?.stop();
    downstream?.close();
    await servers?.stop();
    await cache?.close();
  });

  test('OrchestratorClient trusting the CA scores the catalog ranker: feature store, model server and compute answer over TLS', async () => {
    for (const address of [`127.0.0.1:${orchestrator.port}`, `https://localhost:${orchestrator.port}`]) {
      const client = new OrchestratorClient(address, { tls: { ca: certs.pem(certs.ca) } });
      try {
        const catalogs = servers.data.rows.catalog.slice(0, 6).map((r) => r.key[0]!);
        const { targets } = await client.pointWise({
          modelConfigId: CATALOG_RANKER_ID,
          context: { user_id: 'u1' },
          targets: catalogs.map((id) => ({ id })),
          deadlineMs: 10_000,
        });
        assert.equal(targets.length, catalogs.length, address);
        for (const target of targets) {
          assert.equal(typeof target.values.final_score, 'number', `${address} ${target.id}`);
          // A downstream call refused over TLS would mark the row; only missing features may.
          assert.doesNotMatch(target.error, /UNAVAILABLE|unavailable|certificate|TLS/i, target.error);
        }
        assert.ok(
          targets.some((t) => t.error === ''),
          JSON.stringify(targets),
        );
      } finally {
        client.close();
      }
    }
  });

  test('a client trusting another CA, and a plaintext client, are refused', async () => {
    const wrongCa = new OrchestratorClient(`127.0.0.1:${orchestrator.port}`, {
      tls: { ca: certs.pem(certs.otherCa) },
    });
    const plaintext = new OrchestratorClient(`127.0.0.1:${orchestrator.port}`);
    const request = { modelConfigId: CATALOG_RANKER_ID, targets: [{ id: 'c1' }], deadlineMs: 3000 };
    try {
      await assert.rejects(wrongCa.pointWise(request), { code: grpc.status.UNAVAILABLE });
      await assert.rejects(plaintext.pointWise(request), { code: grpc.status.UNAVAILABLE });
    } finally {
      wrongCa.close();
      plaintext.close();
    }
  });

  test("the orchestrator's downstream client reads the feature store over TLS; trusting another CA fails", async () => {
    const query = {
      entity: 'catalog',
      keysSchema: ['catalog_id'],
      keys: [[servers.data.rows.catalog[0]!.key[0]!]],
      featureGroups: [{ label: 'stats', features: ['price'] }],
    };
    const options = () => ({ signal: new AbortController().signal, deadline: Date.now() + 5000 });
    const rows = await downstream.featureFetcher!.retrieve(query, options());
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.length, 1, 'the row was found');

    const wrong = createOrchestratorClients({
      metrics: new Metrics(),
      featureStoreTarget: servers.targets.featureStore,
      credentials: grpcChannelCredentials(loadTls(tlsSettings({ ca: certs.otherCa })).client),
      retry: { maxAttempts: 1 },
    });
    try {
      await assert.rejects(wrong.featureFetcher!.retrieve(query, options()));
    } finally {
      wrong.close();
    }
  });

  test('HttpServer serves /healthz over https, to the CLI admin client trusting the CA only', async () => {
    const ops = new HttpServer({ name: 'ops', host: '127.0.0.1', port: 0, logger, metrics: new Metrics() });
    const port = await ops.start();
    try {
      assert.equal(ops.secure, true);
      const client = new AdminClient({ url: `https://127.0.0.1:${port}`, tls: material.client });
      assert.deepEqual(await client.get('/healthz'), { status: 'ok', service: 'ops' });
      const byName = await fetchWithTls(material.client)(`https://localhost:${port}/healthz`, {
        method: 'GET',
        headers: {},
      });
      assert.equal(byName.status, 200);

      const wrongCa = new AdminClient({
        url: `https://127.0.0.1:${port}`,
        tls: loadTls(tlsSettings({ ca: certs.otherCa })).client,
      });
      await assert.rejects(wrongCa.get('/healthz'), (err: unknown) => {
        assert.ok(err instanceof AdminUnreachableError, String(err));
        assert.match(err.message, /certificate/i);
        return true;
      });
      // Without the CA, the system's roots do not trust a private CA either.
      await assert.rejects(
        new AdminClient({ url: `https://127.0.0.1:${port}` }).get('/healthz'),
        AdminUnreachableError,
      );
      await assert.rejects(new AdminClient({ url: `http://127.0.0.1:${port}` }).get('/healthz'));
    } finally {
      await ops.stop();
    }
  });
});

describe('client certificates', () => {
  const clientTls = {
    ca: certs.pem(certs.ca),
    cert: certs.pem(certs.clientCert),
    key: certs.pem(certs.clientKey),
  };
  const anonymousTls = { ca: certs.pem(certs.ca) };

  function serverTls(clientAuth: ClientAuth): ServerTls {
    return loadTls(tlsSettings({ clientAuth, clientCa: certs.ca })).server!;
  }

  async function withServers(
    clientAuth: ClientAuth,
    run: (grpcTarget: string, httpsBase: string) => Promise<void>,
  ): Promise<void> {
    const tls = serverTls(clientAuth);
    const server = new GrpcServer({
      name: 'platform',
      host: '127.0.0.1',
      port: 0,
      logger,
      metrics: new Metrics(),
      tls,
    });
    const ops = new HttpServer({
      name: 'ops',
      host: '127.0.0.1',
      port: 0,
      logger,
      metrics: new Metrics(),
      tls,
    });
    const grpcPort = await server.start();
    const httpPort = await ops.start();
    try {
      await run(`127.0.0.1:${grpcPort}`, `https://127.0.0.1:${httpPort}`);
    } finally {
      await server.stop(0);
      await ops.stop();
    }
  }

  async function httpsStatus(base: string, tls: ClientTls): Promise<number | string> {
    try {
      return (await fetchWithTls(tls)(`${base}/healthz`, { method: 'GET', headers: {} })).status;
    } catch (err) {
      return String((err as Error).cause ?? err);
    }
  }

  test('required: a client with a certificate the CA signed is served; one without is refused', async () => {
    await withServers('required', async (target, base) => {
      assert.equal(await health(target, grpcChannelCredentials(clientTls)), 'SERVING');
      assert.equal(await health(target, grpcChannelCredentials(anonymousTls)), 'UNAVAILABLE');
      assert.equal(await httpsStatus(base, clientTls), 200);
      assert.match(String(await httpsStatus(base, anonymousTls)), /certificate|socket hang up|ECONNRESET/i);
    });
  });

  test('required: a client certificate from another CA is refused', async () => {
    const other = loadTls(
      tlsSettings({ clientCert: certs.otherServerCert, clientKey: certs.otherServerKey, outgoing: 'on' }),
    ).client!;
    await withServers('required', async (target, base) => {
      assert.equal(await health(target, grpcChannelCredentials(other)), 'UNAVAILABLE');
      assert.notEqual(await httpsStatus(base, other), 200);
    });
  });

  test('optional: clients with and without a certificate are both served', async () => {
    await withServers('optional', async (target, base) => {
      assert.equal(await health(target, grpcChannelCredentials(clientTls)), 'SERVING');
      assert.equal(await health(target, grpcChannelCredentials(anonymousTls)), 'SERVING');
      assert.equal(await httpsStatus(base, clientTls), 200);
      assert.equal(await httpsStatus(base, anonymousTls), 200);
    });
  });

  test('serverName: the name checked in the server certificate instead of the host dialled', async () => {
    await withServers('off', async (target, base) => {
      const named = (serverName: string) => ({ ...anonymousTls, serverName });
      assert.equal(await health(target, grpcChannelCredentials(named('localhost'))), 'SERVING');
      assert.equal(await health(target, grpcChannelCredentials(named('elsewhere.example'))), 'UNAVAILABLE');
      assert.equal(await httpsStatus(base, named('localhost')), 200);
      assert.match(String(await httpsStatus(base, named('elsewhere.example'))), /elsewhere\.example/);
      // An address as the name: checked against the certificate's IP addresses (127.0.0.1 only).
      assert.equal(await health(target, grpcChannelCredentials(named('127.0.0.1'))), 'SERVING');
      assert.equal(await health(target, grpcChannelCredentials(named('10.0.0.1'))), 'UNAVAILABLE');
      assert.equal(await httpsStatus(base, named('127.0.0.1')), 200);
      assert.match(String(await httpsStatus(base, named('10.0.0.1'))), /10\.0\.0\.1/);
    });
  });

  test('off: TLS without client certificates; a plaintext client is refused', async () => {
    await withServers('off', async (target, base) => {
      assert.equal(await health(target, grpcChannelCredentials(anonymousTls)), 'SERVING');
      assert.equal(await health(target, grpc.credentials.createInsecure()), 'UNAVAILABLE');
      assert.equal(await httpsStatus(base, anonymousTls), 200);
    });
  });
});
