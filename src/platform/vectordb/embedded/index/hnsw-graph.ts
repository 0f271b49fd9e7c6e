/**
 * The HNSW graph of one collection, on hnswlib-node. Labels are the collection's row numbers. The
 * library was chosen over usearch because its search takes a filter that is applied during the graph
 * walk (non-matching nodes are walked through but never returned, and the walk goes on until `ef`
 * matching nodes are found), so a filtered query neither loses recall nor comes back short; usearch's
 * JavaScript API can only over-fetch and filter afterwards (measurements in bench/RESULTS.md).
 *
 * hnswlib-node is synchronous and single-threaded; callers keep each call short (the indexer inserts
 * in time slices). Searches stay on the event loop (a worker round trip costs more than a search,
 * bench/RESULTS.md "vss-recall"); only large builds move to a worker thread (graph-builder.ts), which
 * hands the graph back as a file that {@link loadAsync} reads on libuv's thread pool.
 */
import hnswlib from 'hnswlib-node';
import type { DistanceFunction, HnswParams } from '../../vector-db.js';
import { Bitset } from '../storage/bitset.js';

/** hnswlib's space name for each distance (the parallel builder takes the same names). */
export const SPACE = { DOT: 'ip', COSINE: 'cosine', EUCLIDEAN: 'l2' } as const;

/** Fixed so that two builds of the same points in the same order give the same graph. */
export const RANDOM_SEED = 100;

export interface GraphHits {
  rows: number[];
  /** hnswlib distances: 1 − dot (DOT), 1 − cosine (COSINE), squared L2 (EUCLIDEAN). */
  distances: number[];
}

export class HnswGraph {
  private index: hnswlib.HierarchicalNSW;
  /** Labels the graph holds, including deleted ones (hnswlib keeps them as tombstones). */
  readonly present = new Bitset();
  /** Labels marked deleted: never returned, reused in place when the row is inserted again. */
  readonly deleted = new Bitset();
  private elements = 0;
  private tombstones = 0;

  constructor(
    readonly distance: DistanceFunction,
    readonly dimension: number,
    readonly params: HnswParams,
    capacity = 1024,
  ) {
    this.index = new hnswlib.HierarchicalNSW(SPACE[distance], dimension);
    this.index.initIndex(Math.max(16, capacity), params.m, params.efConstruction, RANDOM_SEED, false);
  }

  /** Reads a graph written by {@link save}; `present`/`deleted` are the label sets saved with it. */
  static load(
    path: string,
    distance: DistanceFunction,
    dimension: number,
    params: HnswParams,
    present: Bitset,
    deleted: Bitset,
  ): HnswGraph {
    const index = new hnswlib.HierarchicalNSW(SPACE[distance], dimension);
    index.readIndexSync(path, false);
    return HnswGraph.wrap(index, path, distance, dimension, params, present, deleted);
  }

  /**
   * {@link load} off the event loop: hnswlib-node reads the file on libuv's thread pool into an index
   * nothing else holds yet, so the loop only pays for the label sets.
   */
  static async loadAsync(
    path: string,
    distance: DistanceFunction,
    dimension: number,
    params: HnswParams,
    present: Bitset,
    deleted: Bitset,
  ): Promise<HnswGraph> {
    const index = new hnswlib.HierarchicalNSW(SPACE[distance], dimension);
    await index.readIndex(path, false);
    return HnswGraph.wrap(index, path, distance, dimension, params, present, deleted);
  }

  private static wrap(
    index: hnswlib.HierarchicalNSW,
    path: string,
    distance: DistanceFunction,
    dimension: number,
    params: HnswParams,
    present: Bitset,
    deleted: Bitset,
  ): HnswGraph {
    const graph = new HnswGraph(distance, dimension, params, 16);
    graph.index = index;
    graph.present.or(present);
    graph.deleted.or(deleted);
    graph.elements = present.count();
    graph.tombstones = deleted.count();
    if (graph.index.getCurrentCount() !== graph.elements) {
      throw new Error(
        `graph file ${path} holds ${graph.index.getCurrentCount()} nodes, the snapshot lists ${graph.elements}`,
      );
    }
    return graph;
  }

  /** Nodes that can be returned. */
  get size(): number {
    return this.elements - this.tombstones;
  }

  /** Deleted nodes still in the graph. */
  get deletedCount(): number {
    return this.tombstones;
  }

  /** Room for `nodes` nodes without growing during inserts (one resize instead of many). */
  reserve(nodes: number): void {
    if (nodes > this.index.getMaxElements()) this.index.resizeIndex(nodes);
  }

  /** Inserts `row`, or re-inserts it in place (new vector) when the label is already there. */
  insert(row: number, vector: Float32Array): void {
    if (!this.present.has(row)) {
      if (this.elements + 1 > this.index.getMaxElements()) {
        this.index.resizeIndex(Math.max(1024, this.index.getMaxElements() * 2));
      }
      this.elements++;
      this.present.add(row);
    } else if (this.deleted.has(row)) {
      // hnswlib un-deletes the label and moves it to the new vector (updatePoint).
      this.deleted.delete(row);
      this.tombstones--;
    }
    this.index.addPoint(Array.from(vector), row);
  }

  /** Marks `row` deleted; it stays in the graph for navigation until re-inserted or compacted away. */
  remove(row: number): void {
    if (!this.present.has(row) || this.deleted.has(row)) return;
    this.index.markDelete(row);
    this.deleted.add(row);
    this.tombstones++;
  }

  contains(row: number): boolean {
    return this.present.has(row) && !this.deleted.has(row);
  }

  /**
   * The `k` nearest non-deleted nodes, walking with candidate list `ef`; with `accept`, only
   * accepted nodes are collected (the walk still passes through the others).
   */
  search(query: Float32Array, k: number, ef: number, accept?: (row: number) => boolean): GraphHits {
    const wanted = Math.min(k, this.index.getMaxElements());
    if (this.size === 0 || wanted <= 0) return { rows: [], distances: [] };
    this.index.setEf(Math.max(ef, wanted));
    const found = this.index.searchKnn(Array.from(query), wanted, accept);
    return { rows: found.neighbors, distances: found.distances };
  }

  save(path: string): void {
    this.index.writeIndexSync(path);
  }
}
