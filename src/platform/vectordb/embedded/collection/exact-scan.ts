/**
 * Exact scoring in JavaScript: the planner's exact scan over the points a selective filter leaves,
 * the backlog of points not yet indexed, and the final scores of every hit (so scores do not depend
 * on which path found a point). Keys are "smaller is better": −dot, −cosine, squared L2.
 */
import type { DistanceFunction } from '../../vector-db.js';
import type { Bitset } from '../storage/bitset.js';
import type { PointStore } from '../storage/point-store.js';

/** Squared L2 distance of row `base` to the query; four accumulators let the loop pipeline. */
function squaredL2(vectors: Float32Array, base: number, query: Float32Array, dimension: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let d = 0;
  for (; d + 3 < dimension; d += 4) {
    const a = vectors[base + d]! - query[d]!;
    const b = vectors[base + d + 1]! - query[d + 1]!;
    const c = vectors[base + d + 2]! - query[d + 2]!;
    const e = vectors[base + d + 3]! - query[d + 3]!;
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += e * e;
  }
  for (; d < dimension; d++) {
    const a = vectors[base + d]! - query[d]!;
    s0 += a * a;
  }
  return s0 + s1 + s2 + s3;
}

function dot(vectors: Float32Array, base: number, query: Float32Array, dimension: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let d = 0;
  for (; d + 3 < dimension; d += 4) {
    s0 += vectors[base + d]! * query[d]!;
    s1 += vectors[base + d + 1]! * query[d + 1]!;
    s2 += vectors[base + d + 2]! * query[d + 2]!;
    s3 += vectors[base + d + 3]! * query[d + 3]!;
  }
  for (; d < dimension; d++) s0 += vectors[base + d]! * query[d]!;
  return s0 + s1 + s2 + s3;
}

/** Scores rows of one collection against one query. */
export class Scorer {
  private readonly kind: 0 | 1 | 2;
  private readonly inverseQueryNorm: number;

  constructor(
    private readonly store: PointStore,
    distance: DistanceFunction,
    private readonly query: Float32Array,
  ) {
    this.kind = distance === 'EUCLIDEAN' ? 0 : distance === 'DOT' ? 1 : 2;
    const norm = dot(query, 0, query, query.length);
    this.inverseQueryNorm = norm === 0 ? 0 : 1 / Math.sqrt(norm);
  }

  /** The key of `row`: smaller is better. */
  key(row: number): number {
    const { store, query } = this;
    const dimension = query.length;
    const chunk = store.chunkOf(row);
    const base = store.offsetOf(row);
    if (this.kind === 0) return squaredL2(chunk, base, query, dimension);
    const product = dot(chunk, base, query, dimension);
    return this.kind === 1 ? -product : -product * store.inverseNorms[row]! * this.inverseQueryNorm;
  }

  /** Offers every row of `rows` to `top`. */
  scan(rows: Bitset, top: TopK): void {
    const { words } = rows;
    for (let w = 0; w < words.length; w++) {
      let word = words[w]!;
      while (word !== 0) {
        const low = word & -word;
        const row = (w << 5) + 31 - Math.clz32(low);
        word ^= low;
        const key = this.key(row);
        // Most rows lose to the current k-th: skip the heap for them.
        if (key <= top.threshold) top.offer(row, key);
      }
    }
  }
}

export function prepareScorer(store: PointStore, distance: DistanceFunction, query: Float32Array): Scorer {
  return new Scorer(store, distance, query);
}

/** The port's score from a key. */
export function scoreOf(key: number, distance: DistanceFunction): number {
  return distance === 'EUCLIDEAN' ? Math.sqrt(key) : -key;
}

/**
 * The best `k` (row, key) pairs seen, as a bounded max-heap whose root is the worst kept. Ties on
 * the key go to the smaller id, so the cut at `k` is deterministic.
 */
export class TopK {
  readonly rows: number[] = [];
  readonly keys: number[] = [];

  constructor(
    readonly k: number,
    private readonly ids: (string | undefined)[],
  ) {}

  /** Whether (keyA, rowA) ranks below (keyB, rowB). */
  private worse(keyA: number, rowA: number, keyB: number, rowB: number): boolean {
    if (keyA !== keyB) return keyA > keyB;
    return (this.ids[rowA] ?? '') > (this.ids[rowB] ?? '');
  }

  /** Keys above this cannot enter (ties are decided by id in {@link offer}). */
  get threshold(): number {
    return this.rows.length < this.k ? Number.POSITIVE_INFINITY : this.keys[0]!;
  }

  offer(row: number, key: number): void {
    const { rows, keys } = this;
    if (rows.length < this.k) {
      rows.push(row);
      keys.push(key);
      let at = rows.length - 1;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!this.worse(key, row, keys[parent]!, rows[parent]!)) break;
        rows[at] = rows[parent]!;
        keys[at] = keys[parent]!;
        at = parent;
      }
      rows[at] = row;
      keys[at] = key;
      return;
    }
    if (this.k === 0 || !this.worse(keys[0]!, rows[0]!, key, row)) return;
    // Replace the root and sift down.
    let at = 0;
    const size = rows.length;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= size) break;
      const right = left + 1;
      let child = left;
      if (right < size && this.worse(keys[right]!, rows[right]!, keys[left]!, rows[left]!)) child = right;
      if (!this.worse(keys[child]!, rows[child]!, key, row)) break;
      rows[at] = rows[child]!;
      keys[at] = keys[child]!;
      at = child;
    }
    rows[at] = row;
    keys[at] = key;
  }

  /** Kept pairs, best first. */
  sorted(): { rows: number[]; keys: number[] } {
    const order = this.rows.map((_, i) => i);
    order.sort((a, b) =>
      this.worse(this.keys[a]!, this.rows[a]!, this.keys[b]!, this.rows[b]!)
        ? 1
        : this.worse(this.keys[b]!, this.rows[b]!, this.keys[a]!, this.rows[a]!)
          ? -1
          : 0,
    );
    return { rows: order.map((i) => this.rows[i]!), keys: order.map((i) => this.keys[i]!) };
  }
}

/** Scores every row of `rows` into `top`. */
export function scanInto(rows: Bitset, scorer: Scorer, top: TopK): void {
  scorer.scan(rows, top);
}
