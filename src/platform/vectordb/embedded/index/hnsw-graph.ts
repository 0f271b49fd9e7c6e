/**
 * The HNSW graph of one collection: an hnswlib index (graph-index.ts: the native addon's, or
 * hnswlib-node's without it) and the label sets the collection keeps beside it. Labels are the
 * collection's row numbers. hnswlib was chosen over usearch because its search takes a filter that
 * is applied during the graph walk (non-matching nodes are walked through but never returned, and
 * the walk goes on until `ef` matching nodes are found), so a filtered query neither loses recall nor
 * comes back short; usearch's JavaScript API can only over-fetch and filter afterwards (measurements
 * in bench/RESULTS.md).
 *
 * Writes are synchronous and short (the indexer inserts in time slices); large builds move to a
 * worker thread (graph-builder.ts), which hands the graph back as a file that {@link loadAsync}
 * reads on libuv's thread pool. Searches of a large graph run on the native engine's search pool
 * ({@link searchAsync}): one search is not faster there (a thread hop more), but many at once use
 * every core instead of the event loop's one (issue 38).
 */
import type { DistanceFunction, HnswParams } from '../../vector-db.js';
import { Bitset } from '../storage/bitset.js';
import {
  createGraphIndex,
  defaultGraphEngine,
  type GraphEngine,
  type GraphHits,
  type GraphIndex,
  readGraphIndex,
  readGraphIndexAsync,
} from './graph-index.js';

export type { GraphEngine, GraphHits } from './graph-index.js';

/** hnswlib's space name for each distance (the parallel builder takes the same names). */
export const SPACE = { DOT: 'ip', COSINE: 'cosine', EUCLIDEAN: 'l2' } as const;

/** Fixed so that two builds of the same points in the same order give the same graph. */
export const RANDOM_SEED = 100;

/**
 * Graphs with fewer nodes than this are searched on the event loop even by {@link searchAsync}: such
 * a search takes tens of microseconds, about what the hop to a pool thread and back costs (10–40 µs
 * on the shared 2-core VM); a search of 100,000 × 256 takes about half a millisecond.
 */
export const POOL_MIN_NODES = 2_000;

export class HnswGraph {
  private index: GraphIndex;
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
    engine: GraphEngine = defaultGraphEngine(),
  ) {
    this.index = createGraphIndex(
      engine,
      SPACE[distance],
      dimension,
      Math.max(16, capacity),
      params.m,
      params.efConstruction,
      RANDOM_SEED,
    );
  }

  /** The engine the graph's index runs on. */
  get engine(): GraphEngine {
    return this.index.engine;
  }

  /** Reads a graph written by {@link save}; `present`/`deleted` are the label sets saved with it. */
  static load(
    path: string,
    distance: DistanceFunction,
    dimension: number,
    params: HnswParams,
    present: Bitset,
    deleted: Bitset,
    engine: GraphEngine = defaultGraphEngine(),
  ): HnswGraph {
    const index = readGraphIndex(engine, SPACE[distance], dimension, path);
    return HnswGraph.wrap(index, path, distance, dimension, params, present, deleted);
  }

  /**
   * {@link load} off the event loop: the file is read on libuv's thread pool into an index nothing
   * else holds yet, so the loop only pays for the label sets.
   */
  static async loadAsync(
    path: string,
    distance: DistanceFunction,
    dimension: number,
    params: HnswParams,
    present: Bitset,
    deleted: Bitset,
    engine: GraphEngine = defaultGraphEngine(),
  ): Promise<HnswGraph> {
    const index = await readGraphIndexAsync(engine, SPACE[distance], dimension, path);
    return HnswGraph.wrap(index, path, distance, dimension, params, present, deleted);
  }

  private static wrap(
    index: GraphIndex,
    path: string,
    distance: DistanceFunction,
    dimension: number,
    params: HnswParams,
    present: Bitset,
    deleted: Bitset,
  ): HnswGraph {
    const graph = new HnswGraph(distance, dimension, params, 16, index.engine);
    graph.index = index;
    graph.present.or(present);
    graph.deleted.or(deleted);
    graph.elements = present.count();
    graph.tombstones = deleted.count();
    if (graph.index.count() !== graph.elements) {
      throw new Error(
        `graph file ${path} holds ${graph.index.count()} nodes, the snapshot lists ${graph.elements}`,
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
    if (nodes > this.index.capacity()) this.index.resize(nodes);
  }

  /** Inserts `row`, or re-inserts it in place (new vector) when the label is already there. */
  insert(row: number, vector: Float32Array): void {
    if (!this.present.has(row)) {
      if (this.elements + 1 > this.index.capacity()) {
        this.index.resize(Math.max(1024, this.index.capacity() * 2));
      }
      this.elements++;
      this.present.add(row);
    } else if (this.deleted.has(row)) {
      // hnswlib un-deletes the label and moves it to the new vector (updatePoint).
      this.deleted.delete(row);
      this.tombstones--;
    }
    this.index.add(vector, row);
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
   * The `k` nearest non-deleted nodes, walking with candidate list `ef`; with `filter`, only rows
   * in it are collected (the walk still passes through the others). On the event loop.
   */
  search(query: Float32Array, k: number, ef: number, filter?: Bitset): GraphHits {
    const wanted = Math.min(k, this.index.capacity());
    if (this.size === 0 || wanted <= 0) return { rows: [], distances: [] };
    return this.index.search(query, wanted, Math.max(ef, wanted), filter?.words);
  }

  /**
   * {@link search} on the native engine's search pool when the graph is large enough to be worth
   * the hop; the answer is the same. Writes to this graph may go on meanwhile (each waits for the
   * searches running on it, never the other way round), and so may changes to `filter`: the
   * search copies its words first.
   */
  searchAsync(query: Float32Array, k: number, ef: number, filter?: Bitset): Promise<GraphHits> {
    const wanted = Math.min(k, this.index.capacity());
    if (this.size === 0 || wanted <= 0) return Promise.resolve({ rows: [], distances: [] });
    if (this.elements < POOL_MIN_NODES) {
      return Promise.resolve(this.index.search(query, wanted, Math.max(ef, wanted), filter?.words));
    }
    return this.index.searchAsync(query, wanted, Math.max(ef, wanted), filter?.words);
  }

  save(path: string): void {
    this.index.save(path);
  }
}
