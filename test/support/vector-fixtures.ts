/**
 * Seeded test data for vector search: clustered vectors with boolean attributes of chosen
 * selectivity, and an exact brute-force search for ground truth. Tests and the vss-recall benchmark
 * use it; nothing is downloaded.
 *
 * Why clustered: uniform random vectors in 128 dimensions have no neighbourhood structure, so every
 * ANN library scores equally badly on them (reference/dependencies.md). Real embeddings are clumpy.
 * The generator draws `clusters` centres from N(0, 1) per dimension and each point as its centre
 * plus N(0, spread²) noise; points are assigned to centres round robin.
 *
 * Difficulty comes from the points per cluster: inside a cluster the noise is isotropic, so many
 * neighbours are nearly equidistant and a narrow search misses some. With 1,000 or more points per
 * cluster and the default spread, HNSW (M 16, ef_construction 128) at ef 16 stays below 0.9
 * recall@10, while ef 64 reaches 0.95 and more. Measured: 5,000 × 32 with 2 clusters,
 * 0.833 at ef 16 and 0.996 at ef 64 (test/platform/vectordb/embedded.test.ts); 100,000 × 128 with 100
 * clusters, 0.766 at ef 16 and 0.991 at ef 64 (bench vss-recall). Many small clusters are easy
 * (5,000 × 32 with 20 clusters: 0.97 at ef 16), so keep clusters large when recall is the point.
 *
 * Fewer, larger clusters at a wider `spread` overlap and are harder: 100,000 × 256, COSINE, at
 * spread 1.0 gives 0.973 at ef 64 with 100 clusters and 0.920 with 50 (0.982 at ef 128); the harder
 * fixture of bench vss-recall (70 clusters) is below 0.95 at ef 64, hence the default ef 96.
 */

import { seededRandom } from '../../src/platform/random.js';
import type { DistanceFunction, Payload } from '../../src/platform/vectordb/index.js';

/** Noise standard deviation relative to the unit spread of the centres. */
export const DEFAULT_SPREAD = 0.6;

export interface ClusteredFixtureOptions {
  count: number;
  dimension: number;
  clusters: number;
  /** Noise standard deviation around each centre; default {@link DEFAULT_SPREAD}. */
  spread?: number;
  seed: number;
  /**
   * Boolean attributes: name → share of points where it is `true` (exactly `round(share × count)`
   * points, chosen at random, independent of the clusters). Other points have it `false`.
   */
  flags?: Record<string, number>;
}

export interface VectorFixture {
  count: number;
  dimension: number;
  /** Row-major, `count × dimension`. */
  vectors: Float32Array;
  ids: string[];
  payloads: Payload[];
  /** The cluster each point was drawn around. */
  cluster: Uint32Array;
  /** Centres, row-major `clusters × dimension`. */
  centres: Float32Array;
  spread: number;
  /** Point `i`'s vector (a view, not a copy). */
  vector(i: number): Float32Array;
  /** `n` query vectors from the same distribution, seeded independently of the points. */
  queries(n: number, seed: number): Float32Array[];
}

export { seededRandom } from '../../src/platform/random.js';

/** A deterministic vector of float32 values in [-0.5, 0.5): exact through JSON and float32 storage, none a short decimal. */
export function seededVector(seed: number, dimension: number): number[] {
  const next = seededRandom(seed);
  return Array.from({ length: dimension }, () => Math.fround(next() - 0.5));
}

/** Standard normal draws from a uniform source (Box-Muller, both outputs used). */
export function seededGaussian(seed: number): () => number {
  const uniform = seededRandom(seed);
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const value = spare;
      spare = undefined;
      return value;
    }
    const u = 1 - uniform(); // (0, 1]: log is finite
    const v = uniform();
    const radius = Math.sqrt(-2 * Math.log(u));
    spare = radius * Math.sin(2 * Math.PI * v);
    return radius * Math.cos(2 * Math.PI * v);
  };
}

/** The points of `0..count-1` that carry a flag: an exact-size random subset. */
function chooseSubset(count: number, size: number, random: () => number): Uint8Array {
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  const chosen = new Uint8Array(count);
  for (let i = 0; i < size; i++) {
    const j = i + Math.floor(random() * (count - i));
    const pick = order[j]!;
    order[j] = order[i]!;
    order[i] = pick;
    chosen[pick] = 1;
  }
  return chosen;
}

export function clusteredFixture(options: ClusteredFixtureOptions): VectorFixture {
  const { count, dimension, clusters, seed } = options;
  const spread = options.spread ?? DEFAULT_SPREAD;
  const gaussian = seededGaussian(seed);
  const centres = new Float32Array(clusters * dimension);
  for (let i = 0; i < centres.length; i++) centres[i] = gaussian();
  const vectors = new Float32Array(count * dimension);
  const cluster = new Uint32Array(count);
  for (let p = 0; p < count; p++) {
    const c = p % clusters;
    cluster[p] = c;
    for (let d = 0; d < dimension; d++) {
      vectors[p * dimension + d] = centres[c * dimension + d]! + spread * gaussian();
    }
  }
  const ids = Array.from({ length: count }, (_, i) => `p${i}`);
  const payloads: Payload[] = Array.from({ length: count }, () => ({}));
  const random = seededRandom(seed ^ 0x5bd1e995);
  for (const [name, share] of Object.entries(options.flags ?? {})) {
    const chosen = chooseSubset(count, Math.round(share * count), random);
    for (let p = 0; p < count; p++) payloads[p]![name] = chosen[p] === 1;
  }
  const vector = (i: number) => vectors.subarray(i * dimension, (i + 1) * dimension);
  const queries = (n: number, querySeed: number) => {
    const draw = seededGaussian(querySeed);
    const pick = seededRandom(querySeed ^ 0x27d4eb2f);
    return Array.from({ length: n }, () => {
      const c = Math.floor(pick() * clusters);
      const q = new Float32Array(dimension);
      for (let d = 0; d < dimension; d++) q[d] = centres[c * dimension + d]! + spread * draw();
      return q;
    });
  };
  return { count, dimension, vectors, ids, payloads, cluster, centres, spread, vector, queries };
}

export interface ExactResult {
  /** Row numbers of the nearest points, best first. */
  indices: number[];
  scores: number[];
}

/**
 * Exact k nearest rows of `vectors` (row-major, `dimension` wide) to `query`, by the port's score
 * rules (similarity descending for DOT and COSINE, Euclidean distance ascending), ties by row.
 * `accept` restricts the rows considered (a filter's ground truth).
 */
export function exactSearch(
  vectors: Float32Array,
  dimension: number,
  query: Float32Array,
  k: number,
  distance: DistanceFunction,
  accept?: (row: number) => boolean,
): ExactResult {
  const rows = vectors.length / dimension;
  let queryNorm = 0;
  for (let d = 0; d < dimension; d++) queryNorm += query[d]! * query[d]!;
  queryNorm = Math.sqrt(queryNorm);
  // Keep the best k as "keys" where smaller is better, sorted ascending (insertion into a short list).
  const keys: number[] = [];
  const best: number[] = [];
  for (let r = 0; r < rows; r++) {
    if (accept && !accept(r)) continue;
    const base = r * dimension;
    let key: number;
    if (distance === 'EUCLIDEAN') {
      let sum = 0;
      for (let d = 0; d < dimension; d++) {
        const diff = vectors[base + d]! - query[d]!;
        sum += diff * diff;
      }
      key = sum;
    } else {
      let dot = 0;
      let norm = 0;
      for (let d = 0; d < dimension; d++) {
        dot += vectors[base + d]! * query[d]!;
        norm += vectors[base + d]! * vectors[base + d]!;
      }
      const denominator = Math.sqrt(norm) * queryNorm;
      key = distance === 'DOT' ? -dot : denominator === 0 ? 0 : -dot / denominator;
    }
    if (keys.length === k && key >= keys[k - 1]!) continue;
    let at = keys.length === k ? k - 1 : keys.length;
    while (at > 0 && keys[at - 1]! > key) {
      keys[at] = keys[at - 1]!;
      best[at] = best[at - 1]!;
      at--;
    }
    keys[at] = key;
    best[at] = r;
  }
  const scores = keys.map((key) => (distance === 'EUCLIDEAN' ? Math.sqrt(key) : -key));
  return { indices: best, scores };
}

/** Cosine similarity of two vectors of the same length (the COSINE score the port returns). */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

/** Mean share of each truth list found in the matching result list (recall@k, k = truth length). */
export function recall(found: readonly (readonly string[])[], truth: readonly (readonly string[])[]): number {
  let sum = 0;
  let lists = 0;
  for (let q = 0; q < truth.length; q++) {
    const expected = truth[q]!;
    if (expected.length === 0) continue;
    const got = new Set(found[q] ?? []);
    let hits = 0;
    for (const id of expected) if (got.has(id)) hits++;
    sum += hits / expected.length;
    lists++;
  }
  return lists === 0 ? 1 : sum / lists;
}
