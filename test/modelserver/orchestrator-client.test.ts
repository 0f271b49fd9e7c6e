/**
 * The orchestrator's own KServe v2 client (the one model-serving components score through) against
 * the reference model server: the two sides agree on the wire, not only with the generated client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DataType } from '../../src/datatypes/data-type.js';
import type { ModelServer } from '../../src/modelserver/modelserver-server.js';
import { startModelServer } from '../../src/modelserver/modelserver-server.js';
import { twoHeadRanker, writeModel } from '../../src/modelserver/onnx-builder.js';
import { CallPolicy, ChannelPool, KServeClient } from '../../src/orchestrator/clients/index.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import {
  assertClose,
  expectedProjection,
  expectedScores,
  featureRows,
  readFp32,
  tempRepository,
} from './kserve-client.js';

const K = 4;
const model = twoHeadRanker({ features: K, seed: 77 });

describe('orchestrator KServeClient → model server', () => {
  let server: ModelServer;
  let pool: ChannelPool;
  let client: KServeClient;
  let target: string;

  before(async () => {
    const repository = tempRepository();
    writeModel(repository, 'two_head', 1, model.bytes);
    server = await startModelServer({ repository, logger: createLogger('test', { level: 'silent' }) });
    target = `127.0.0.1:${server.port}`;
    pool = new ChannelPool({ channelsPerTarget: 1 });
    client = new KServeClient(new CallPolicy({ pool, metrics: new Metrics() }));
  });
  after(async () => {
    pool.close();
    await server.stop();
  });

  test('probes and metadata', async () => {
    assert.equal(await client.serverReady(target), true);
    assert.equal(await client.modelReady(target, 'two_head'), true);
    const metadata = await client.modelMetadata(target, 'two_head');
    assert.deepEqual(
      metadata.outputs.map((t) => [t.name, t.dataType, t.shape]),
      [
        ['score', DataType.FP32, [-1, 1]],
        ['embedding', DataType.FP32, [-1, 2]],
      ],
    );
  });

  test('ModelInfer: tensors in, both outputs back in the requested order', async () => {
    const x = featureRows(3, K, 8);
    const outputs = await client.infer(
      target,
      {
        modelName: 'two_head',
        modelVersion: '',
        inputs: [
          { name: 'features', dataType: DataType.FP32, shape: [3, K], data: new Uint8Array(x.buffer) },
        ],
        outputs: ['embedding', 'score'],
      },
      { signal: new AbortController().signal, deadline: Date.now() + 5000 },
    );
    assert.deepEqual(
      outputs.map((t) => [t.name, t.dataType, t.shape]),
      [
        ['embedding', DataType.FP32, [3, 2]],
        ['score', DataType.FP32, [3, 1]],
      ],
    );
    assertClose(readFp32(outputs[0]!.data), expectedProjection(x, K, model.projection, model.offset));
    assertClose(readFp32(outputs[1]!.data), expectedScores(x, K, model.weights, model.bias));
  });

  test('an unknown model reaches the caller as NOT_FOUND', async () => {
    await assert.rejects(
      client.modelMetadata(target, 'missing'),
      (err: unknown) => isLatticeError(err, 'NOT_FOUND') && /unknown model "missing"/.test(err.message),
    );
  });
});
