import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { ModelServer } from '../../src/modelserver/modelserver-server.js';
import { startModelServer } from '../../src/modelserver/modelserver-server.js';
import { logisticRanker, twoHeadRanker, writeModel } from '../../src/modelserver/onnx-builder.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { eventually } from '../support/servers.js';
import {
  assertClose,
  assertStatus,
  expectedProjection,
  expectedScores,
  featureRows,
  fp32Bytes,
  KServeClient,
  readFp32,
  tempRepository,
} from './kserve-client.js';

const K = 6;
const ranker = logisticRanker({ features: K, seed: 41 });
const twoHead = twoHeadRanker({ features: K, seed: 42 });
const silent = createLogger('test', { level: 'silent' });

function rankerRequest(rows: number, seed: number) {
  const x = featureRows(rows, K, seed);
  return {
    x,
    request: {
      modelName: 'ranker',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, K] }],
      rawInputContents: [fp32Bytes(x)],
    },
  };
}

describe('dynamic batching', () => {
  const repository = tempRepository();
  writeModel(repository, 'ranker', 1, ranker.bytes);
  writeModel(repository, 'two_head', 1, twoHead.bytes);
  let server: ModelServer;
  let client: KServeClient;

  before(async () => {
    server = await startModelServer({ repository, logger: silent, batchWindowMs: 25, maxBatchRows: 10_000 });
    client = new KServeClient(server.port);
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test('concurrent requests each get their own rows back, from fewer session runs', async () => {
    const model = server.repository.get('ranker');
    const runsBefore = model.runs;
    const requests = Array.from({ length: 48 }, (_, i) => rankerRequest(1 + (i % 5), 100 + i));
    const responses = await Promise.all(requests.map(({ request }) => client.infer(request)));
    responses.forEach((response, i) => {
      const { x } = requests[i]!;
      const rows = x.length / K;
      assert.deepEqual(response.outputs[0]!.shape, [BigInt(rows), 1n], `request ${i}`);
      assertClose(
        readFp32(response.rawOutputContents[0]!),
        expectedScores(x, K, ranker.weights, ranker.bias),
      );
    });
    const runs = model.runs - runsBefore;
    assert.ok(runs < requests.length, `${runs} session runs for ${requests.length} requests`);
    assert.ok(runs >= 1);
  });

  test('requests asking for different outputs share a run and each gets only its own', async () => {
    const model = server.repository.get('two_head');
    const runsBefore = model.runs;
    const cases = Array.from({ length: 12 }, (_, i) => {
      const x = featureRows(2, K, 300 + i);
      const outputs = [[{ name: 'score' }], [{ name: 'embedding' }], []][i % 3]!;
      return { x, outputs };
    });
    const responses = await Promise.all(
      cases.map(({ x, outputs }) =>
        client.infer({
          modelName: 'two_head',
          inputs: [{ name: 'features', datatype: 'FP32', shape: [2, K] }],
          outputs,
          rawInputContents: [fp32Bytes(x)],
        }),
      ),
    );
    responses.forEach((response, i) => {
      const { x, outputs } = cases[i]!;
      const names = outputs.length > 0 ? outputs.map((o) => o.name) : ['score', 'embedding'];
      assert.deepEqual(
        response.outputs.map((o) => o.name),
        names,
      );
      names.forEach((name, j) => {
        const expected =
          name === 'score'
            ? expectedScores(x, K, twoHead.weights, twoHead.bias)
            : expectedProjection(x, K, twoHead.projection, twoHead.offset);
        assertClose(readFp32(response.rawOutputContents[j]!), expected);
      });
    });
    assert.ok(model.runs - runsBefore < cases.length);
  });

  test('an invalid request in the window fails alone; the others are answered', async () => {
    const good = Array.from({ length: 6 }, (_, i) => rankerRequest(2, 500 + i));
    const bad = client.infer({
      modelName: 'ranker',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [2, K + 1] }],
      rawInputContents: [fp32Bytes(featureRows(2, K + 1, 1))],
    });
    const answers = Promise.all(good.map(({ request }) => client.infer(request)));
    await assertStatus(bad, status.INVALID_ARGUMENT, /input "features": shape/);
    (await answers).forEach((response, i) => {
      const { x } = good[i]!;
      assertClose(
        readFp32(response.rawOutputContents[0]!),
        expectedScores(x, K, ranker.weights, ranker.bias),
      );
    });
  });
});

describe('dynamic batching: maxBatchRows', () => {
  test('a batch runs as soon as it holds maxBatchRows, without waiting for the window', {
    timeout: 20_000,
  }, async () => {
    const repository = tempRepository();
    writeModel(repository, 'ranker', 1, ranker.bytes);
    // A window far longer than the test's timeout: only the row limit can make these calls finish.
    const server = await startModelServer({
      repository,
      logger: silent,
      batchWindowMs: 60_000,
      maxBatchRows: 8,
    });
    const client = new KServeClient(server.port);
    try {
      const model = server.repository.get('ranker');
      const requests = Array.from({ length: 8 }, (_, i) => rankerRequest(2, 700 + i));
      const responses = await Promise.all(requests.map(({ request }) => client.infer(request)));
      responses.forEach((response, i) => {
        const { x } = requests[i]!;
        assertClose(
          readFp32(response.rawOutputContents[0]!),
          expectedScores(x, K, ranker.weights, ranker.bias),
        );
      });
      assert.equal(model.runs, 2, '16 rows in batches of at most 8 rows');
      assert.deepEqual(server.batcher?.stats, { runs: 2, requests: 8 });
    } finally {
      client.close();
      await server.stop();
    }
  });
});

describe('dynamic batching: reload', () => {
  test("a reload while a request waits for its batch does not close that request's model", async () => {
    const repository = tempRepository();
    writeModel(repository, 'ranker', 1, ranker.bytes);
    const server = await startModelServer({
      repository,
      logger: silent,
      batchWindowMs: 1500,
      maxBatchRows: 1000,
    });
    const client = new KServeClient(server.port);
    try {
      const { x, request } = rankerRequest(3, 900);
      const waiting = client.infer(request);
      await eventually(() => server.batcher?.pending() === 1, 5000, 'the request to wait in a batch');
      const v2 = logisticRanker({ features: K, seed: 43 });
      writeModel(repository, 'ranker', 2, v2.bytes);
      await server.reload();

      const first = await waiting;
      assert.equal(first.modelVersion, '1');
      assertClose(readFp32(first.rawOutputContents[0]!), expectedScores(x, K, ranker.weights, ranker.bias));
      const second = await client.infer(request);
      assert.equal(second.modelVersion, '2');
      assertClose(readFp32(second.rawOutputContents[0]!), expectedScores(x, K, v2.weights, v2.bias));
    } finally {
      client.close();
      await server.stop();
    }
  });
});
