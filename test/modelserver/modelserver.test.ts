import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { decodeFp16, encodeFp16 } from '../../src/datatypes/fp16.js';
import { startModelServer } from '../../src/modelserver/index.js';
import type { ModelServer } from '../../src/modelserver/modelserver-server.js';
import {
  encodeModel,
  logisticRanker,
  node,
  OnnxType,
  textEcho,
  twoHeadRanker,
  typedRanker,
  valueInfo,
  writeModel,
} from '../../src/modelserver/onnx-builder.js';
import { createLogger } from '../../src/platform/logging/index.js';
import {
  assertClose,
  assertStatus,
  bytesTensor,
  expectedProjection,
  expectedScores,
  featureRows,
  fp32Bytes,
  int64Bytes,
  KServeClient,
  readBytesTensor,
  readFp32,
  readInt64,
  readUint16,
  tempRepository,
  uint16Bytes,
} from './kserve-client.js';

const K = 5;
const rankerV1 = logisticRanker({ features: K, seed: 11 });
const rankerV3 = logisticRanker({ features: K, weights: [0.5, -1, 0.25, 2, -0.75], bias: -0.3 });
const twoHead = twoHeadRanker({ features: K, seed: 21 });
const typed = typedRanker({ ids: 3, seed: 31 });
const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/** A model without a batch dimension: `x` FP32 [2, 3] → `y` = -x. */
const fixedModel = encodeModel({
  name: 'fixed',
  input: [valueInfo('x', OnnxType.FLOAT, [2, 3])],
  output: [valueInfo('y', OnnxType.FLOAT, [2, 3])],
  node: [node('Neg', ['x'], ['y'])],
});

describe('model server over gRPC', () => {
  let server: ModelServer;
  let client: KServeClient;

  before(async () => {
    const repository = tempRepository();
    writeModel(repository, 'ranker', 1, rankerV1.bytes);
    writeModel(repository, 'ranker', 3, rankerV3.bytes);
    writeModel(repository, 'two_head', 1, twoHead.bytes);
    writeModel(repository, 'typed', 1, typed.bytes, { maxBatchSize: 4 });
    writeModel(repository, 'echo', 1, textEcho().bytes);
    writeModel(repository, 'fixed', 1, fixedModel);
    server = await startModelServer({ repository, logger: createLogger('test', { level: 'silent' }) });
    client = new KServeClient(server.port);
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test('health: live, ready, server metadata', async () => {
    assert.equal(await client.live(), true);
    assert.equal(await client.ready(), true);
    const metadata = await client.serverMetadata();
    assert.equal(metadata.name, 'lattice-modelserver');
    assert.equal(metadata.version, packageVersion);
  });

  test('model readiness: known versions are ready, unknown models and versions are not', async () => {
    assert.equal(await client.modelReady('ranker'), true);
    assert.equal(await client.modelReady('ranker', '3'), true);
    assert.equal(await client.modelReady('ranker', '2'), false);
    assert.equal(await client.modelReady('nope'), false);
  });

  test('model metadata: versions, platform, KServe datatypes, -1 for the dynamic batch dimension', async () => {
    const ranker = await client.modelMetadata('ranker');
    assert.deepEqual(ranker, {
      name: 'ranker',
      versions: ['1', '3'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1n, BigInt(K)] }],
      outputs: [{ name: 'score', datatype: 'FP32', shape: [-1n, 1n] }],
    });
    const typedMeta = await client.modelMetadata('typed', '1');
    assert.deepEqual(
      typedMeta.inputs.map((t) => [t.name, t.datatype, t.shape]),
      [
        ['ids', 'INT64', [-1n, 3n]],
        ['scale', 'FP16', [-1n, 1n]],
      ],
    );
    assert.deepEqual(
      typedMeta.outputs.map((t) => [t.name, t.datatype]),
      [
        ['score', 'FP16'],
        ['id_sum', 'INT64'],
      ],
    );
    assert.equal((await client.modelMetadata('echo')).inputs[0]!.datatype, 'BYTES');
    assert.deepEqual((await client.modelMetadata('fixed')).inputs[0]!.shape, [2n, 3n]);
  });

  test('ModelInfer with raw contents returns sigmoid(X·W + b) of the highest version', async () => {
    const x = featureRows(7, K, 1);
    const response = await client.infer({
      modelName: 'ranker',
      id: 'req-1',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [7, K] }],
      rawInputContents: [fp32Bytes(x)],
    });
    assert.equal(response.modelName, 'ranker');
    assert.equal(response.modelVersion, '3');
    assert.equal(response.id, 'req-1');
    assert.deepEqual(
      response.outputs.map((o) => [o.name, o.datatype, o.shape]),
      [['score', 'FP32', [7n, 1n]]],
    );
    assertClose(
      readFp32(response.rawOutputContents[0]!),
      expectedScores(x, K, rankerV3.weights, rankerV3.bias),
    );
  });

  test('an explicit version runs that version; typed fp32 contents work like raw', async () => {
    const x = featureRows(3, K, 2);
    const response = await client.infer({
      modelName: 'ranker',
      modelVersion: '1',
      inputs: [
        { name: 'features', datatype: 'FP32', shape: [3, K], contents: { fp32Contents: Array.from(x) } },
      ],
    });
    assert.equal(response.modelVersion, '1');
    assertClose(
      readFp32(response.rawOutputContents[0]!),
      expectedScores(x, K, rankerV1.weights, rankerV1.bias),
    );
  });

  test('multi-output: a score and a 2-d vector per row; `outputs` selects and orders them', async () => {
    const rows = 4;
    const x = featureRows(rows, K, 3);
    const request = {
      modelName: 'two_head',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, K] }],
      rawInputContents: [fp32Bytes(x)],
    };
    const scores = expectedScores(x, K, twoHead.weights, twoHead.bias);
    const embedding = expectedProjection(x, K, twoHead.projection, twoHead.offset);

    const all = await client.infer(request);
    assert.deepEqual(
      all.outputs.map((o) => [o.name, o.shape]),
      [
        ['score', [4n, 1n]],
        ['embedding', [4n, 2n]],
      ],
    );
    assertClose(readFp32(all.rawOutputContents[0]!), scores);
    assertClose(readFp32(all.rawOutputContents[1]!), embedding);

    const one = await client.infer({ ...request, outputs: [{ name: 'embedding' }] });
    assert.deepEqual(
      one.outputs.map((o) => o.name),
      ['embedding'],
    );
    assert.equal(one.rawOutputContents.length, 1);
    assertClose(readFp32(one.rawOutputContents[0]!), embedding);

    const reordered = await client.infer({ ...request, outputs: [{ name: 'embedding' }, { name: 'score' }] });
    assert.deepEqual(
      reordered.outputs.map((o) => o.name),
      ['embedding', 'score'],
    );
    assertClose(readFp32(reordered.rawOutputContents[1]!), scores);
  });

  test('INT64 and FP16 inputs and outputs', async () => {
    const ids = [1n, 2n, 3n, -4n, 10n, 0n];
    const scales = [1, 0.5];
    const response = await client.infer({
      modelName: 'typed',
      inputs: [
        { name: 'ids', datatype: 'INT64', shape: [2, 3] },
        { name: 'scale', datatype: 'FP16', shape: [2, 1] },
      ],
      rawInputContents: [int64Bytes(ids), uint16Bytes(scales.map(encodeFp16))],
    });
    assert.deepEqual(
      response.outputs.map((o) => [o.name, o.datatype, o.shape]),
      [
        ['score', 'FP16', [2n, 1n]],
        ['id_sum', 'INT64', [2n, 1n]],
      ],
    );
    assert.deepEqual(readInt64(response.rawOutputContents[1]!), [6n, 6n]);
    const expected = expectedScores(ids.map(Number), 3, typed.weights, typed.bias).map(
      (p, r) => p * scales[r]!,
    );
    // One FP16 rounding step on the way out: allow a unit in the last place of a half float.
    assertClose(readUint16(response.rawOutputContents[0]!).map(decodeFp16), expected, 1e-3);

    // FP16 has no typed contents field in KServe v2: it must come raw.
    await assertStatus(
      client.infer({
        modelName: 'typed',
        inputs: [
          { name: 'ids', datatype: 'INT64', shape: [2, 3], contents: { int64Contents: ids } },
          { name: 'scale', datatype: 'FP16', shape: [2, 1], contents: { fp32Contents: scales } },
        ],
      }),
      status.INVALID_ARGUMENT,
      /input "scale": FP16 has no typed contents field/,
    );
  });

  test('BYTES: length-prefixed strings in and out, raw or as bytes_contents', async () => {
    const strings = ['hello', '', 'naïve ☃', 'x'.repeat(300)];
    const raw = await client.infer({
      modelName: 'echo',
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [4, 1] }],
      rawInputContents: [bytesTensor(strings)],
    });
    assert.deepEqual(raw.outputs[0]!.datatype, 'BYTES');
    assert.deepEqual(raw.outputs[0]!.shape, [4n, 1n]);
    assert.deepEqual(readBytesTensor(raw.rawOutputContents[0]!), strings);
    const typedContents = await client.infer({
      modelName: 'echo',
      inputs: [
        {
          name: 'text',
          datatype: 'BYTES',
          shape: [2, 1],
          contents: { bytesContents: [Buffer.from('a'), Buffer.from('bc')] },
        },
      ],
    });
    assert.deepEqual(readBytesTensor(typedContents.rawOutputContents[0]!), ['a', 'bc']);
  });

  test('a model without a batch dimension takes exactly its shape', async () => {
    const x = [1, -2, 3, -4, 5, -6];
    const response = await client.infer({
      modelName: 'fixed',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3] }],
      rawInputContents: [fp32Bytes(x)],
    });
    assert.deepEqual(readFp32(response.rawOutputContents[0]!), [-1, 2, -3, 4, -5, 6]);
    await assertStatus(
      client.infer({
        modelName: 'fixed',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [3, 3] }],
        rawInputContents: [fp32Bytes([...x, 7, 8, 9])],
      }),
      status.INVALID_ARGUMENT,
      /input "x": shape \[3, 3\] does not match the model's \[2, 3\]/,
    );
  });

  describe('INVALID_ARGUMENT naming the input', () => {
    const features = (shape: number[], bytes = fp32Bytes(featureRows(shape[0]!, K, 9))) => ({
      modelName: 'ranker',
      inputs: [{ name: 'features', datatype: 'FP32', shape }],
      rawInputContents: [bytes],
    });

    test('unknown input name', async () => {
      await assertStatus(
        client.infer({ ...features([2, K]), inputs: [{ name: 'feature', datatype: 'FP32', shape: [2, K] }] }),
        status.INVALID_ARGUMENT,
        /model "ranker" has no input "feature" \(inputs: features\)/,
      );
    });

    test('wrong datatype', async () => {
      await assertStatus(
        client.infer({
          ...features([2, K]),
          inputs: [{ name: 'features', datatype: 'FP64', shape: [2, K] }],
        }),
        status.INVALID_ARGUMENT,
        /input "features": datatype "FP64" does not match the model's FP32/,
      );
    });

    test('wrong shape: a fixed dimension or the rank', async () => {
      await assertStatus(
        client.infer(features([2, K + 1])),
        status.INVALID_ARGUMENT,
        /input "features": shape \[2, 6\] does not match the model's \[-1, 5\]/,
      );
      await assertStatus(
        client.infer(features([2 * K], fp32Bytes(featureRows(2, K, 1)))),
        status.INVALID_ARGUMENT,
        /input "features": shape \[10\]/,
      );
    });

    test('raw contents whose length does not fit the shape', async () => {
      await assertStatus(
        client.infer(features([3, K], fp32Bytes(featureRows(2, K, 1)))),
        status.INVALID_ARGUMENT,
        /input "features": raw contents hold 40 bytes, but 15 FP32 elements need 60/,
      );
    });

    test('missing input, and inputs that disagree on the batch dimension', async () => {
      await assertStatus(
        client.infer({
          modelName: 'typed',
          inputs: [{ name: 'ids', datatype: 'INT64', shape: [1, 3] }],
          rawInputContents: [int64Bytes([1n, 2n, 3n])],
        }),
        status.INVALID_ARGUMENT,
        /missing input "scale"/,
      );
      await assertStatus(
        client.infer({
          modelName: 'typed',
          inputs: [
            { name: 'ids', datatype: 'INT64', shape: [1, 3] },
            { name: 'scale', datatype: 'FP16', shape: [2, 1] },
          ],
          rawInputContents: [int64Bytes([1n, 2n, 3n]), uint16Bytes([0x3c00, 0x3c00])],
        }),
        status.INVALID_ARGUMENT,
        /input "scale": first dimension 2 differs from input "ids"'s 1/,
      );
    });

    test('more rows than the model config allows', async () => {
      await assertStatus(
        client.infer({
          modelName: 'typed',
          inputs: [
            { name: 'ids', datatype: 'INT64', shape: [5, 3] },
            { name: 'scale', datatype: 'FP16', shape: [5, 1] },
          ],
          rawInputContents: [int64Bytes(Array(15).fill(1n)), uint16Bytes(Array(5).fill(0x3c00))],
        }),
        status.INVALID_ARGUMENT,
        /model "typed" takes at most 4 rows per request; this one has 5/,
      );
    });

    test('raw contents count, unknown output, malformed BYTES, no data, no model name', async () => {
      await assertStatus(
        client.infer({
          ...features([1, K]),
          rawInputContents: [fp32Bytes(featureRows(1, K, 1)), Buffer.alloc(4)],
        }),
        status.INVALID_ARGUMENT,
        /raw_input_contents has 2 entries for 1 inputs/,
      );
      await assertStatus(
        client.infer({ ...features([1, K]), outputs: [{ name: 'probability' }] }),
        status.INVALID_ARGUMENT,
        /model "ranker" has no output "probability" \(outputs: score\)/,
      );
      await assertStatus(
        client.infer({
          modelName: 'echo',
          inputs: [{ name: 'text', datatype: 'BYTES', shape: [2, 1] }],
          rawInputContents: [Buffer.concat([bytesTensor(['ok']), Buffer.from([200, 0, 0, 0, 1])])],
        }),
        status.INVALID_ARGUMENT,
        /input "text": BYTES element 1 claims 200 bytes/,
      );
      await assertStatus(
        client.infer({
          modelName: 'ranker',
          inputs: [{ name: 'features', datatype: 'FP32', shape: [1, K] }],
        }),
        status.INVALID_ARGUMENT,
        /input "features" has no data/,
      );
      await assertStatus(client.infer({ modelName: '' }), status.INVALID_ARGUMENT, /model_name is required/);
    });
  });

  test('unknown model or version: NOT_FOUND', async () => {
    const request = {
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1, K] }],
      rawInputContents: [fp32Bytes(featureRows(1, K, 1))],
    };
    await assertStatus(
      client.infer({ ...request, modelName: 'nope' }),
      status.NOT_FOUND,
      /unknown model "nope" \(serving: echo, fixed, ranker, two_head, typed\)/,
    );
    await assertStatus(
      client.infer({ ...request, modelName: 'ranker', modelVersion: '2' }),
      status.NOT_FOUND,
      /model "ranker" has no version "2" \(versions: 1, 3\)/,
    );
    await assertStatus(client.modelMetadata('nope'), status.NOT_FOUND, /unknown model "nope"/);
    await assertStatus(client.modelMetadata('ranker', '9'), status.NOT_FOUND, /no version "9"/);
  });
});
