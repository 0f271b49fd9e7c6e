import type { Payload } from '../../vector-db.js';
import { Bitset } from './bitset.js';

/** A row holds no point (free for reuse). */
export const FREE = 0;
/** A row's point waits in the backlog to be inserted into the graph. */
export const PENDING = 1;
/** A row's point is in the graph. */
export const INDEXED = 2;

/** About how many bytes of vectors one chunk holds (a power of two rows, at least one). */
const CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * The points of one collection by row: ids, vectors, payloads and each row's indexing state. Rows
 * freed by deletes are reused by later inserts, so memory follows the peak point count rather than
 * the number of writes. The graph copies vectors for itself; this copy serves exact scans,
 * `getPoints` and snapshots.
 *
 * Vectors live in chunks of a power of two rows (about 4 MB each), row-major within a chunk: growing
 * adds a chunk and copies nothing. One array doubled by copying made every write past a power of two
 * copy all earlier vectors into fresh memory, whose pages the kernel then faulted in one by one:
 * about half the page faults of the consumers' event loop during an ingestion (bench/RESULTS.md,
 * "vss-ingest").
 */
export class PointStore {
  /** Vector chunks; row r is at offset (r & chunkMask) × dimension of chunk r >>> chunkShift. */
  readonly chunks: Float32Array[] = [];
  readonly chunkShift: number;
  readonly chunkMask: number;
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
    this.chunkShift = Math.max(0, Math.floor(Math.log2(CHUNK_BYTES / (dimension * 4))));
    this.chunkMask = (1 << this.chunkShift) - 1;
    this.inverseNorms = new Float32Array(capacity);
    this.state = new Uint8Array(capacity);
  }

  get capacity(): number {
    return this.state.length;
  }

  get liveCount(): number {
    return this.rowOf.size;
  }

  /** The chunk holding `row`'s vector (see {@link offsetOf}). */
  chunkOf(row: number): Float32Array {
    return this.chunks[row >>> this.chunkShift]!;
  }

  /** Where `row`'s vector starts in its chunk. */
  offsetOf(row: number): number {
    return (row & this.chunkMask) * this.dimension;
  }

  vector(row: number): Float32Array {
    const base = this.offsetOf(row);
    return this.chunkOf(row).subarray(base, base + this.dimension);
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
    this.ensure(row + 1);
    this.chunkOf(row).set(vector, this.offsetOf(row));
    let sum = 0;
    for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
    this.inverseNorms[row] = sum === 0 ? 0 : 1 / Math.sqrt(sum);
  }

  sameVector(row: number, vector: Float32Array): boolean {
    const chunk = this.chunkOf(row);
    const base = this.offsetOf(row);
    for (let i = 0; i < vector.length; i++) if (chunk[base + i] !== vector[i]) return false;
    return true;
  }

  /** The vectors of rows below `rows`, one after another (a snapshot's vectors file). */
  vectorBytes(rows: number): Uint8Array {
    const bytes = new Uint8Array(rows * this.dimension * 4);
    const perChunk = (this.chunkMask + 1) * this.dimension * 4;
    for (let c = 0; c * perChunk < bytes.length; c++) {
      const chunk = this.chunks[c]!;
      const length = Math.min(perChunk, bytes.length - c * perChunk);
      bytes.set(new Uint8Array(chunk.buffer, chunk.byteOffset, length), c * perChunk);
    }
    return bytes;
  }

  /** Rebuilds the free list after a load placed points at their saved rows. */
  restoreFreeRows(highWater: number): void {
    this.highWater = highWater;
    this.freeRows.length = 0;
    for (let row = highWater - 1; row >= 0; row--) if (!this.live.has(row)) this.freeRows.push(row);
  }

  private ensure(rows: number): void {
    const chunkRows = this.chunkMask + 1;
    while (this.chunks.length * chunkRows < rows) {
      this.chunks.push(new Float32Array(chunkRows * this.dimension));
    }
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, this.capacity * 2);
    const norms = new Float32Array(capacity);
    norms.set(this.inverseNorms);
    this.inverseNorms = norms;
    const state = new Uint8Array(capacity);
    state.set(this.state);
    this.state = state;
  }
}
