/** The raw-library baseline of the vss benchmarks: hnswlib-node built in-process, timed and weighed. */
import hnswlib from 'hnswlib-node';
import { HNSW_DEFAULTS } from '../../src/platform/vectordb/index.js';
import { settledRss } from './memory.js';

export interface RawIndex {
  index: hnswlib.HierarchicalNSW;
  buildSeconds: number;
  /** RSS growth over the build (after full collections before and after) ÷ points. */
  bytesPerPoint: number;
}

/**
 * An L2 index of `points` vectors inserted in order with the engine's default graph parameters
 * (M, ef_construction, random seed 100), search width set to the default ef.
 */
export function buildRawIndex(
  points: number,
  dimension: number,
  vector: (i: number) => Float32Array,
): RawIndex {
  const rss = settledRss();
  const started = performance.now();
  const index = new hnswlib.HierarchicalNSW('l2', dimension);
  index.initIndex(points, HNSW_DEFAULTS.m, HNSW_DEFAULTS.efConstruction, 100, false);
  for (let i = 0; i < points; i++) index.addPoint(Array.from(vector(i)), i);
  const buildSeconds = (performance.now() - started) / 1000;
  const bytesPerPoint = (settledRss() - rss) / points;
  index.setEf(HNSW_DEFAULTS.efSearch);
  return { index, buildSeconds, bytesPerPoint };
}
