import type { Payload } from '../vector-db.js';
import { Bitset } from './bitset.js';

/** A row holds no point (free for reuse). */
export const FREE = 0;
/** A row's point waits in the backlog to be inserted into the graph. */
export const PENDING = 1;
/** A row's point is in the graph. */
export const INDEXED = 2;

/**
 * The points of one collection by row: ids, vectors (one Float32Array, row-major), payloads and
 * each row's indexing state. Rows freed by deletes are reused by later inserts, so memory follows the
 * peak point count rather than the number of writes. The graph copies vectors for itself; this copy
 * serves exact scans, `getPoints` and snapshots.
 */
export class PointStore {
  vectors: Float32Array;
  /** 1 / |v| per row, for COSINE exact scans (0 for a zero vector). */
  inverseNorms: Float32Array;
  state: Uint8Array;
  ids: (string | undefined)[] = [];
  payloads: (Payload | undefined)[] = [];
  readonly rowOf = new Map<string, number>();
  readonly live = new Bitset();
  readonly indexed = new Bitset();
  /** Rows ever used; rows at or above are untouched. */
  highWater = 0;
  indexedCount = 0;
  private readonly freeRows: number[] = [];

  constructor(
    readonly dimension: number,
    capacity = 1024,
  ) {
    this.vectors = new Float32Array(capacity * dimension);
    this.inverseNorms = new Float32Array(capacity);
    this.state = new Uint8Array(capacity);
  }

  get capacity(): number {
    return this.state.length;
  }

  get liveCount(): number {
    return this.rowOf.size;
  }

  vector(row: number): Float32Array {
    return this.vectors.subarray(row * this.dimension, (row + 1) * this.dimension);
  }

  /** A row for a new id: a freed one when there is one. */
  allocate(id: string): number {
    const row = this.freeRows.pop() ?? this.highWater++;
    this.ensure(row + 1);
    this.ids[row] = id;
    this.rowOf.set(id, row);
    this.live.add(row);
    this.state[row] = PENDING;
    return row;
  }

  /** Frees a row (its id and payload go; the vector stays until the row is reused). */
  release(row: number): void {
    const id = this.ids[row];
    if (id !== undefined) this.rowOf.delete(id);
    this.ids[row] = undefined;
    this.payloads[row] = undefined;
    this.setState(row, FREE);
    this.live.delete(row);
    this.freeRows.push(row);
  }

  setState(row: number, state: number): void {
    if (this.state[row] === INDEXED) {
      this.indexedCount--;
      this.indexed.delete(row);
    }
    this.state[row] = state;
    if (state === INDEXED) {
      this.indexedCount++;
      this.indexed.add(row);
    }
  }

  setVector(row: number, vector: Float32Array): void {
    this.vectors.set(vector, row * this.dimension);
    let sum = 0;
    for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
    this.inverseNorms[row] = sum === 0 ? 0 : 1 / Math.sqrt(sum);
  }

  sameVector(row: number, vector: Float32Array): boolean {
    const base = row * this.dimension;
    for (let i = 0; i < vector.length; i++) if (this.vectors[base + i] !== vector[i]) return false;
    return true;
  }

  /** Rebuilds the free list after a load placed points at their saved rows. */
  restoreFreeRows(highWater: number): void {
    this.highWater = highWater;
    this.freeRows.length = 0;
    for (let row = highWater - 1; row >= 0; row--) if (!this.live.has(row)) this.freeRows.push(row);
  }

  private ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, this.capacity * 2);
    const vectors = new Float32Array(capacity * this.dimension);
    vectors.set(this.vectors);
    this.vectors = vectors;
    const norms = new Float32Array(capacity);
    norms.set(this.inverseNorms);
    this.inverseNorms = norms;
    const state = new Uint8Array(capacity);
    state.set(this.state);
    this.state = state;
  }
}
