/**
 * The baseline of bench/vss-ingest: the index library the embedded vector DB builds its graphs with
 * (hnswlib-node, src/platform/vectordb/embedded/index/hnsw-graph.ts), adding the same vectors one by one on
 * this thread, with the engine's parameters: the collection's space (COSINE → `cosine`), the default
 * M and ef_construction, the engine's random seed, vectors handed over as the engine does
 * (`Array.from`). Capacity is reserved up front (the engine grows its graph by doubling).
 */
import hnswlib from 'hnswlib-node';
import { HNSW_DEFAULTS } from '../../src/platform/vectordb/index.js';

const RANDOM_SEED = 100;

export interface RawBuild {
  /** Vectors added per second. */
  per_s: number;
  build_s: number;
}

export function buildRawIndex(vectors: readonly Float32Array[], dimension: number): RawBuild {
  const started = performance.now();
  const index = new hnswlib.HierarchicalNSW('cosine', dimension);
  index.initIndex(vectors.length, HNSW_DEFAULTS.m, HNSW_DEFAULTS.efConstruction, RANDOM_SEED, false);
  for (let i = 0; i < vectors.length; i++) index.addPoint(Array.from(vectors[i]!), i);
  const seconds = (performance.now() - started) / 1000;
  if (index.getCurrentCount() !== vectors.length) throw new Error('raw index: points missing');
  return { per_s: Math.round(vectors.length / seconds), build_s: Number(seconds.toFixed(3)) };
}
