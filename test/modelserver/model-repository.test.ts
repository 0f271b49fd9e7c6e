import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ModelRepository } from '../../src/modelserver/model-repository.js';
import { startModelServer } from '../../src/modelserver/modelserver-server.js';
import { logisticRanker, typedRanker, writeModel } from '../../src/modelserver/onnx-builder.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { tempRepository } from './kserve-client.js';

const ranker = (seed: number) => logisticRanker({ features: 3, seed }).bytes;

async function assertLoadError(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isLatticeError(err, 'FAILED_PRECONDITION'), String(err));
    assert.match(err.message, message);
    return true;
  });
}

const escapeRegExp = (path: string): string => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('model repository', () => {
  test('loads every version; metadata comes from the session; the highest version is the default', async () => {
    const root = tempRepository();
    writeModel(root, 'ranker', 1, ranker(1));
    writeModel(root, 'ranker', 10, ranker(2));
    writeModel(root, 'ranker', 2, ranker(3));
    writeModel(root, 'typed', 1, typedRanker({ ids: 2 }).bytes, { maxBatchSize: 16 });
    mkdirSync(join(root, 'ranker', 'notes')); // not a version: ignored, as Triton does
    const repository = await ModelRepository.open(root);
    try {
      assert.deepEqual(repository.names(), ['ranker', 'typed']);
      assert.deepEqual(
        repository.versions('ranker').map((m) => m.version),
        [1, 2, 10],
      );
      assert.equal(repository.get('ranker').version, 10);
      assert.equal(repository.get('ranker', '2').version, 2);
      const typed = repository.get('typed');
      assert.equal(typed.config.maxBatchSize, 16);
      assert.equal(typed.batchable, true);
      assert.deepEqual(
        typed.inputs.map((s) => [s.name, s.type.kserve, s.shape]),
        [
          ['ids', 'INT64', [-1, 2]],
          ['scale', 'FP16', [-1, 1]],
        ],
      );
      assert.throws(
        () => repository.get('ranker', '3'),
        (err: unknown) => isLatticeError(err, 'NOT_FOUND'),
      );
      assert.throws(
        () => repository.get('other'),
        (err: unknown) => isLatticeError(err, 'NOT_FOUND'),
      );
    } finally {
      await repository.close();
    }
  });

  test('a broken model file fails the load with an error naming the file', async () => {
    const root = tempRepository();
    writeModel(root, 'good', 1, ranker(1));
    const broken = writeModel(root, 'broken', 3, new Uint8Array([0x08, 0xff, 0xff, 0x01, 0x02]));
    await assertLoadError(
      ModelRepository.open(root),
      new RegExp(`cannot load model ${escapeRegExp(broken)}`),
    );
    await assertLoadError(
      startModelServer({ repository: root, logger: createLogger('test', { level: 'silent' }) }),
      new RegExp(escapeRegExp(broken)),
    );
  });

  test('layout problems name the path: no versions, missing model.onnx, bad config.json, no directory', async () => {
    const root = tempRepository();
    mkdirSync(join(root, 'empty'));
    mkdirSync(join(root, 'missing', '1'), { recursive: true });
    await assertLoadError(
      ModelRepository.open(root),
      new RegExp(
        `${escapeRegExp(join(root, 'empty'))} has no version directories.*${escapeRegExp(join(root, 'missing', '1', 'model.onnx'))} is missing`,
      ),
    );

    const other = tempRepository();
    writeModel(other, 'ranker', 1, ranker(1));
    writeModel(other, 'ranker', 2, ranker(2));
    writeFileSync(join(other, 'ranker', 'config.json'), '{"maxBatchSize": -1}');
    await assertLoadError(
      ModelRepository.open(other),
      new RegExp(`${escapeRegExp(join(other, 'ranker', 'config.json'))}: `),
    );

    await assertLoadError(ModelRepository.open(join(other, 'nope')), /is not a directory/);
  });

  test('reload picks up new versions and models and retires removed ones', async () => {
    const root = tempRepository();
    writeModel(root, 'ranker', 1, ranker(1));
    const repository = await ModelRepository.open(root);
    try {
      const v1 = repository.get('ranker');
      writeModel(root, 'ranker', 2, ranker(2));
      writeModel(root, 'second', 1, ranker(3));
      await repository.reload();
      assert.equal(repository.get('ranker').version, 2);
      assert.deepEqual(repository.names(), ['ranker', 'second']);
      assert.notEqual(repository.get('ranker', '1'), v1, 'every session is created anew');

      rmSync(join(root, 'second'), { recursive: true });
      await repository.reload();
      assert.deepEqual(repository.names(), ['ranker']);
    } finally {
      await repository.close();
    }
  });

  test('a reload that fails keeps the loaded models serving', async () => {
    const root = tempRepository();
    writeModel(root, 'ranker', 1, ranker(1));
    const repository = await ModelRepository.open(root);
    try {
      const before = repository.get('ranker');
      const broken = writeModel(root, 'ranker', 2, new TextEncoder().encode('not an onnx model'));
      await assertLoadError(repository.reload(), new RegExp(escapeRegExp(broken)));
      assert.equal(repository.get('ranker'), before);
      assert.deepEqual(
        repository.versions('ranker').map((m) => m.version),
        [1],
      );
      const outputs = await before.run(
        new Map([['features', { data: new Float32Array([1, 2, 3]), shape: [1, 3] }]]),
        [],
      );
      assert.deepEqual(outputs.get('score')?.shape, [1, 1]);
    } finally {
      await repository.close();
    }
  });
});
