/**
 * `lattice up` with TLS and client certificates required, end to end: started with LATTICE_TLS_*
 * (certificates made by openssl here), it onboards the vss demo through its own admin API over
 * https, its orchestrator scores the catalog ranker through the feature store, model server and
 * compute over TLS, and every gRPC server and the ops and admin HTTP servers answer a client that
 * trusts the CA and shows a certificate, and refuse one that does not; the ops server's HTTP/JSON form
 * of Predict reaches the orchestrator over TLS too.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { CATALOG_RANKER_ID } from '../../../examples/catalog-ranker.js';
import { OrchestratorClient } from '../../../src/orchestrator/client.js';
import { grpcChannelCredentials } from '../../../src/platform/grpc/index.js';
import { fetchWithTls } from '../../../src/platform/http/index.js';
import { startLattice } from '../../support/lattice-up-process.js';
import { eventually } from '../../support/servers.js';
import { makeTestCertificates } from './certificates.js';

const healthProto = fileURLToPath(
  new URL('../../../node_modules/grpc-health-check/proto/health/v1/health.proto', import.meta.url),
);
const HealthClient = (
  grpc.loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  }
).grpc.health.v1.Health;

/** As test/cli/lattice-up.test.ts: a busy shared machine has taken 50 s to start every part. */
const START_TIMEOUT_MS = 180_000;

const certs = makeTestCertificates();
const tlsEnv = {
  LATTICE_TLS_CERT: certs.serverCert,
  LATTICE_TLS_KEY: certs.serverKey,
  LATTICE_TLS_CLIENT_CA: certs.ca,
  LATTICE_TLS_CLIENT_AUTH: 'required',
  LATTICE_TLS_CA: certs.ca,
  LATTICE_TLS_CLIENT_CERT: certs.clientCert,
  LATTICE_TLS_CLIENT_KEY: certs.clientKey,
};
const clientTls = {
  ca: certs.pem(certs.ca),
  cert: certs.pem(certs.clientCert),
  key: certs.pem(certs.clientKey),
};

function lattice(args: string[], env: Record<string, string>) {
  return startLattice(args, { ...tlsEnv, ...env });
}

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

describe('lattice up with TLS', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  test('every server serves TLS with client certificates required; the parts call each other over it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-up-tls-'));
    const up = lattice(['up'], { LATTICE_DATA_DIR: dataDir });
    children.push(up.child);
    await eventually(
      () => up.output.stdout.includes('Ctrl-C') || up.child.exitCode !== null,
      START_TIMEOUT_MS,
      'lattice up to start',
    );
    const { stdout } = up.output;
    assert.match(stdout, /Ctrl-C/, `stdout: ${stdout}\nstderr: ${up.output.stderr}`);
    // The vss demo was onboarded through the admin API over https with the client certificate.
    assert.match(stdout, /Onboarded the vss demo/);

    const grpcTargets = [...stdout.matchAll(/^ {2}gRPC .*?\s(\S+:\d+)$/gm)].map((m) => m[1]!);
    assert.equal(
      grpcTargets.length,
      6,
      `orchestrator, feature store, model server, compute, vss, platform: ${stdout}`,
    );
    for (const target of grpcTargets) {
      assert.equal(await health(target, grpcChannelCredentials(clientTls)), 'SERVING', target);
      assert.equal(await health(target, grpcChannelCredentials({ ca: clientTls.ca })), 'UNAVAILABLE', target);
      assert.equal(await health(target, grpc.credentials.createInsecure()), 'UNAVAILABLE', target);
    }

    const orchestrator = /^ {2}gRPC orchestrator\.v1 .*\s(\S+:\d+)$/m.exec(stdout)?.[1];
    assert.ok(orchestrator, stdout);
    const client = new OrchestratorClient(orchestrator, { tls: clientTls });
    const wrongCa = new OrchestratorClient(orchestrator, {
      tls: { ...clientTls, ca: certs.pem(certs.otherCa) },
    });
    try {
      const { targets } = await client.pointWise({
        modelConfigId: CATALOG_RANKER_ID,
        context: { user_id: 'u1' },
        targets: ['c1', 'c2', 'c3'].map((id) => ({ id })),
        deadlineMs: 10_000,
      });
      for (const target of targets) {
        assert.equal(typeof target.values.final_score, 'number');
        assert.equal(target.error, '', `${target.id}: every seeded target scores without a row error`);
      }
      await assert.rejects(
        wrongCa.pointWise({ modelConfigId: CATALOG_RANKER_ID, targets: [{ id: 'c1' }], deadlineMs: 5000 }),
        { code: grpc.status.UNAVAILABLE },
      );
    } finally {
      client.close();
      wrongCa.close();
    }

    const ops = /HTTP \/healthz \/readyz \/metrics(?: \/models)?\s+(https:\/\/\S+)/.exec(stdout)?.[1];
    const admin = /HTTP vss admin API .*\s(https:\/\/\S+)$/m.exec(stdout)?.[1];
    assert.ok(ops && admin, stdout);
    const fetch = fetchWithTls(clientTls);
    const ready = await fetch(`${ops}/readyz`, { method: 'GET', headers: {} });
    assert.equal(ready.status, 200, await ready.text());
    await assert.rejects(
      fetchWithTls({ ca: clientTls.ca })(`${ops}/healthz`, { method: 'GET', headers: {} }),
    );
    // The HTTP/JSON form of Predict calls the orchestrator's gRPC server over TLS with the certificate.
    const rpc = await fetch(`${ops}/api/v1/rpc/orchestrator.v1.Predict/InferPointWise`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        modelConfigId: CATALOG_RANKER_ID,
        contextFeatures: [{ name: 'user_id', dataType: 'DATA_TYPE_STRING', value: 'dTE=' }],
        targets: [{ id: 'c1' }],
      }),
    });
    const scored = await rpc.text();
    assert.equal(rpc.status, 200, scored);
    assert.equal((JSON.parse(scored) as { targetScores: { error: string }[] }).targetScores[0]!.error, '');

    // lattice predict, in its own process, dials the orchestrator with the settings' CA and certificate.
    const predict = lattice(
      [
        'predict',
        '--model-config',
        CATALOG_RANKER_ID,
        '--context',
        'user_id=u1',
        '--target-id',
        'c1',
        '--address',
        orchestrator,
        '--json',
      ],
      { LATTICE_DATA_DIR: dataDir },
    );
    children.push(predict.child);
    assert.equal(await predict.exited, 0, predict.output.stderr);
    assert.match(predict.output.stdout, /final_score/);

    // The CLI's admin client, in its own process, reads the same settings: https, the CA, the certificate.
    const models = lattice(['vss', 'models', '--address', admin, '--json'], { LATTICE_DATA_DIR: dataDir });
    children.push(models.child);
    assert.equal(await models.exited, 0, models.output.stderr);
    assert.match(models.output.stdout, /"products"/);
    const refused = lattice(['vss', 'models', '--address', admin], {
      LATTICE_DATA_DIR: dataDir,
      LATTICE_TLS_CA: certs.otherCa,
    });
    children.push(refused.child);
    assert.equal(await refused.exited, 1);
    assert.match(refused.output.stderr, /not reachable at https:.*certificate/);

    up.child.kill('SIGTERM');
    assert.equal(await up.exited, 0, up.output.stderr);
  });
});
