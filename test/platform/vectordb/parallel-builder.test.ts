/**
 * The native parallel graph builder (native/hnsw-parallel, src/platform/vectordb/embedded/index/
 * parallel-builder.ts): on one thread it writes the very graph file hnswlib-node writes for the same
 * inserts (fresh, and onto a saved graph with deleted and re-inserted labels), so its inserts are
 * hnswlib-node's; on two threads every label is in the graph and found; a cancel stops it; bad input
 * (and a released graph) is refused. The addon is compiled by `npm ci` (native/hnsw-parallel/
 * build.mjs): here it must load.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { HnswGraph, RANDOM_SEED, SPACE } from '../../../src/platform/vectordb/embedded/index/hnsw-graph.js';
import {
  loadParallelBuilder,
  type ParallelBuilderConstructor,
  parallelBuilderProblem,
} from '../../../src/platform/vectordb/embedded/index/parallel-builder.js';
import { Bitset } from '../../../src/platform/vectordb/embedded/storage/bitset.js';
import type { DistanceFunction, HnswParams } from '../../../src/platform/vectordb/vector-db.js';
import { clusteredFixture } from '../../support/vector-fixtures.js';

const params: HnswParams = { m: 12, efConstruction: 64, efSearch: 64 };
const dimension = 16;
const fixture = clusteredFixture({ count: 3000, dimension, clusters: 8, seed: 41 });
const noCancel = () => new Int32Array(new SharedArrayBuffer(4));
const labelsOf = (from: number, to: number) => Uint32Array.from({ length: to - from }, (_, i) => from + i);
const vectorsOf = (from: number, to: number) => fixture.vectors.slice(from * dimension, to * dimension);

function builder(): ParallelBuilderConstructor {
  const Builder = loadParallelBuilder();
  assert.ok(Builder, `the parallel builder loads: ${parallelBuilderProblem()}`);
  return Builder;
}

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-parallel-builder-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('native parallel graph builder', () => {
  for (const distance of ['COSINE', 'DOT', 'EUCLIDEAN'] as DistanceFunction[]) {
    test(`on one thread it writes the graph hnswlib-node writes (${distance}, fresh and onto a saved graph)`, (t) => {
      const Builder = builder();
      const dir = tempDir(t);
      // hnswlib-node through HnswGraph: 2,000 points, 100 of them deleted, saved; then 1,000 more
      // and 50 of the deleted ones again, from the file.
      const graph = new HnswGraph(distance, dimension, params, 2000, 'hnswlib-node');
      for (let i = 0; i < 2000; i++) graph.insert(i, fixture.vector(i));
      for (let i = 500; i < 600; i++) graph.remove(i);
      graph.save(join(dir, 'base.hnsw'));
      const more = [...labelsOf(2000, 3000), ...labelsOf(500, 550)];
      const moreVectors = new Float32Array(more.length * dimension);
      for (const [i, row] of more.entries()) moreVectors.set(fixture.vector(row), i * dimension);
      const loaded = HnswGraph.load(
        join(dir, 'base.hnsw'),
        distance,
        dimension,
        params,
        Bitset.of(graph.present.words),
        Bitset.of(graph.deleted.words),
        'hnswlib-node',
      );
      // As the worker reserves: the graph's nodes plus every row of the round, re-inserts included.
      loaded.reserve(2000 + more.length);
      for (const [i, row] of more.entries()) {
        loaded.insert(row, moreVectors.subarray(i * dimension, (i + 1) * dimension));
      }
      loaded.save(join(dir, 'expected.hnsw'));

      const fresh = new Builder(
        SPACE[distance],
        dimension,
        2000,
        params.m,
        params.efConstruction,
        RANDOM_SEED,
      );
      assert.equal(fresh.add(vectorsOf(0, 2000), labelsOf(0, 2000), 1, noCancel()), 2000);
      fresh.save(join(dir, 'fresh.hnsw'));
      const reference = new HnswGraph(distance, dimension, params, 2000, 'hnswlib-node');
      for (let i = 0; i < 2000; i++) reference.insert(i, fixture.vector(i));
      reference.save(join(dir, 'reference.hnsw'));
      assert.ok(
        readFileSync(join(dir, 'fresh.hnsw')).equals(readFileSync(join(dir, 'reference.hnsw'))),
        'a fresh graph: the same file, byte for byte',
      );

      const onto = new Builder(
        SPACE[distance],
        dimension,
        2000 + more.length,
        params.m,
        params.efConstruction,
        RANDOM_SEED,
        join(dir, 'base.hnsw'),
      );
      assert.equal(onto.add(moreVectors, Uint32Array.from(more), 1, noCancel()), more.length);
      assert.equal(onto.count(), 3000);
      onto.save(join(dir, 'actual.hnsw'));
      assert.ok(
        readFileSync(join(dir, 'actual.hnsw')).equals(readFileSync(join(dir, 'expected.hnsw'))),
        'onto a saved graph with deleted labels: the same file, byte for byte',
      );
    });
  }

  test('on two threads every label is in the graph and is its own nearest neighbour', (t) => {
    const Builder = builder();
    const dir = tempDir(t);
    const native = new Builder('cosine', dimension, 3000, params.m, params.efConstruction, RANDOM_SEED);
    assert.equal(native.add(vectorsOf(0, 3000), labelsOf(0, 3000), 2, noCancel()), 3000);
    native.save(join(dir, 'parallel.hnsw'));
    const all = new Bitset();
    for (let i = 0; i < 3000; i++) all.add(i);
    const graph = HnswGraph.load(join(dir, 'parallel.hnsw'), 'COSINE', dimension, params, all, new Bitset());
    assert.equal(graph.size, 3000);
    let found = 0;
    for (let i = 0; i < 3000; i += 7) if (graph.search(fixture.vector(i), 1, 64).rows[0] === i) found++;
    assert.ok(found >= 0.98 * Math.ceil(3000 / 7), `${found} of ${Math.ceil(3000 / 7)} found themselves`);
  });

  test('an addon that is not there, or is not the builder, is reported rather than thrown', (t) => {
    const dir = tempDir(t);
    const missing = join(dir, 'missing.node');
    assert.equal(loadParallelBuilder(missing), undefined);
    assert.match(
      parallelBuilderProblem(missing) ?? '',
      /missing\.node is not there \(not compiled at install\)/,
    );
    const broken = join(dir, 'broken.node');
    writeFileSync(broken, 'not a shared object');
    assert.equal(loadParallelBuilder(broken), undefined);
    assert.ok(parallelBuilderProblem(broken), 'a reason is given');
    assert.equal(parallelBuilderProblem(), undefined, 'the installed one loads');
  });

  test('a raised cancel flag stops the inserts', () => {
    const Builder = builder();
    const native = new Builder('l2', dimension, 3000, params.m, params.efConstruction, RANDOM_SEED);
    const cancel = noCancel();
    Atomics.store(cancel, 0, 1);
    assert.equal(native.add(vectorsOf(0, 3000), labelsOf(0, 3000), 2, cancel), 0);
    assert.equal(native.count(), 0);
  });

  test('vectors that do not match the labels, an unknown space, or a released graph are refused', () => {
    const Builder = builder();
    const native = new Builder('l2', dimension, 10, params.m, params.efConstruction, RANDOM_SEED);
    assert.throws(
      () => native.add(vectorsOf(0, 3), labelsOf(0, 4), 1, noCancel()),
      /dimension floats per label/,
    );
    assert.throws(
      () => new Builder('manhattan' as 'l2', dimension, 10, params.m, params.efConstruction, RANDOM_SEED),
      /space must be l2, ip or cosine/,
    );
    native.release();
    assert.equal(native.count(), 0);
    assert.throws(() => native.add(vectorsOf(0, 3), labelsOf(0, 3), 1, noCancel()), /has no graph/);
    assert.throws(() => native.save(join(tmpdir(), 'never.hnsw')), /has no graph/);
  });
});
