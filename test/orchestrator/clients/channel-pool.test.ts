import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import {
  GRPCInferenceServiceService,
  type ServerReadyRequest,
  type ServerReadyResponse,
} from '../../../src/gen/inference/grpc_service.js';
import {
  ChannelPool,
  createOrchestratorClients,
  KServeClient,
} from '../../../src/orchestrator/clients/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { plumbing, startServer, type TestServer } from './grpc-fixtures.js';

/** A model server that records the peer (client address and port: one per connection) of each call. */
async function peerRecordingServer(peers: string[]): Promise<TestServer> {
  return startServer((s) =>
    s.addService(GRPCInferenceServiceService, {
      serverReady: (
        call: ServerUnaryCall<ServerReadyRequest, ServerReadyResponse>,
        cb: sendUnaryData<ServerReadyResponse>,
      ) => {
        peers.push(call.getPeer());
        cb(null, { ready: true });
      },
    }),
  );
}

describe('ChannelPool', () => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const server of servers) await server.stop();
  });

  test('hands out a target’s channels round-robin, each its own connection', async () => {
    const peers: string[] = [];
    const server = await peerRecordingServer(peers);
    servers.push(server);
    const io = plumbing({ channelsPerTarget: 3 });
    try {
      const first = [
        io.pool.client(server.target),
        io.pool.client(server.target),
        io.pool.client(server.target),
      ];
      assert.equal(new Set(first).size, 3);
      assert.equal(io.pool.client(server.target), first[0]);
      const client = new KServeClient(io.policy);
      for (let i = 0; i < 6; i++) assert.equal(await client.serverReady(server.target), true);
      assert.equal(new Set(peers).size, 3, `connections used: ${[...new Set(peers)].join(', ')}`);
    } finally {
      io.close();
    }
  });

  test('a target first named after start-up (a config reload) just gets a new entry', async () => {
    const metrics = new Metrics();
    const clients = createOrchestratorClients({ metrics, channelsPerTarget: 1 });
    try {
      const a = await peerRecordingServer([]);
      servers.push(a);
      assert.equal(await clients.modelInferer.serverReady(a.target), true);
      // A model config added later names an endpoint that did not exist when the clients were made.
      const b = await peerRecordingServer([]);
      servers.push(b);
      assert.equal(await clients.modelInferer.serverReady(b.target), true);
      assert.equal(clients.policy.circuitState(b.target), 'closed');
      assert.equal(clients.featureFetcher, undefined, 'no feature store target configured');
    } finally {
      clients.close();
    }
  });

  test('rejects bad settings and targets; after close() nothing is handed out', () => {
    assert.throws(() => new ChannelPool({ channelsPerTarget: 0 }), /channelsPerTarget/);
    const pool = new ChannelPool();
    assert.throws(() => pool.client(''), /invalid gRPC target/);
    pool.client('127.0.0.1:1');
    assert.deepEqual(pool.targets(), ['127.0.0.1:1']);
    pool.close();
    assert.throws(
      () => pool.client('127.0.0.1:1'),
      (err) => isLatticeError(err, 'UNAVAILABLE') && /closed/.test(err.message),
    );
  });
});
