/**
 * The embedded `VectorDb`: in-process HNSW collections (hnswlib, graph-index.ts) with payload
 * indexes, a query planner, a background indexer, a write-ahead log and snapshots on disk. The
 * default for `npm start`; one process owns its directory (a lock file says which). Graph searches
 * run on a pool of threads (the native addon's), so concurrent searches use every core.
 *
 * Durability, with `dir`: every create, upsert, delete and setPayload is applied in memory and
 * appended to the collection's write-ahead log, and its call resolves once an fdatasync covers it
 * (concurrent calls share one), so an acknowledged write survives a crash or SIGKILL. Reads may see
 * a write a moment before it is acknowledged. Indexing is not part of the acknowledgement: the graph
 * catches up in the background, and a reopened collection re-indexes what its snapshot had pending.
 * Snapshots (periodic, early when a log grows large, on `snapshot()` and on `close()`) bound the
 * replay and truncate the log. Files: collection-files.ts.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { LatticeError } from '../../../errors.js';
import { compileFilters, filtersKey } from '../../filters.js';
import {
  closedError,
  collectionConflict,
  collectionNotFound,
  sameSpec,
  selectPayload,
  type ValidatedSpec,
  validateCollectionName,
  validateCollectionSpec,
  validateIds,
  validatePayload,
  validatePoints,
  validateSearchShape,
  validateVector,
} from '../../validation.js';
import type {
  CollectionInfo,
  CollectionSpec,
  GetPointsOptions,
  Payload,
  PointInput,
  SearchHit,
  SearchRequest,
  StoredPoint,
  VectorDb,
} from '../../vector-db.js';
import { graphBuilder } from '../index/graph-builder.js';
import { sizeSearchPool, warnIfNoNativeGraph } from '../index/graph-index.js';
import type { IndexingOptions } from '../index/indexing-options.js';
import { warnIfNoParallelBuilder } from '../index/parallel-builder.js';
import type { RoundTimings } from '../index/worker-round.js';
import { Collection, type SearchStats } from './collection.js';
import {
  explainQuery,
  type PreparedQuery,
  type QueryExplanation,
  type QueryOptions,
  runQuery,
} from './collection-search.js';
import { DataDirectory } from './data-directory.js';
import { scoreOf } from './exact-scan.js';
import { PLANNER_DEFAULTS, type PlannerSettings } from './query-planner.js';

export interface EmbeddedVectorDbOptions {
  /** Data directory (snapshots and write-ahead logs); without it collections live in memory only. */
  dir?: string;
  /**
   * With `dir`: acknowledge writes only once they are in the fsynced write-ahead log (default true).
   * false keeps snapshots only, and a crash loses the writes made since the last one.
   */
  wal?: boolean;
  /** Snapshot a collection early once its write-ahead log holds this many bytes. Default 128 MiB. */
  walSnapshotBytes?: number;
  /** Snapshot changed collections this often (ms); 0 turns it off. Default 60,000 (with `dir`). */
  snapshotIntervalMs?: number;
  /** A snapshot first rebuilds the graph when more than this share of its nodes are deleted points. */
  compactionThreshold?: number;
  /** Longest time the indexer holds the event loop in one go, ms. Default 10. */
  indexSliceMs?: number;
  /**
   * A backlog of at least this many points is inserted into the graph on a worker thread rather
   * than on the event loop; Infinity (or 0) never. Default {@link WORKER_BUILD_ROWS}.
   */
  workerBuildRows?: number;
  /**
   * A worker build of at least this many points inserts them on several threads with the native
   * parallel builder (parallel-builder.ts), when it is installed; 0 never. Default
   * {@link PARALLEL_BUILD_ROWS}.
   */
  parallelBuildRows?: number;
  /** Threads of a parallel build while the process neither writes nor searches. Default: the cores Node reports. */
  buildThreads?: number;
  /**
   * Threads of the process's graph search pool (the native addon's; without it every search runs
   * on the event loop). The pool is one per process: the first database opened sizes it, by
   * default to one thread per core Node reports (availableParallelism). 0: this database walks its
   * graphs on the event loop, one search at a time.
   */
  searchThreads?: number;
  /** A batch search yields to the event loop after this many ms of work. Default 20. */
  searchSliceMs?: number;
  planner?: Partial<PlannerSettings>;
  /** Called when a periodic snapshot fails (default: a process warning). */
  onSnapshotError?: (err: unknown, collection: string) => void;
}

export interface StorageStats {
  /** Rows ever used (live and free). */
  rows: number;
  /** Rows of deleted points, reused by later inserts. */
  freeRows: number;
  graphNodes: number;
  /** Graph nodes of deleted points, until reused or compacted away. */
  deletedGraphNodes: number;
  compacting: boolean;
  /** A worker thread is building the graph of the backlog. */
  buildingInWorker: boolean;
  /** Graphs built on the worker thread and swapped in since the collection was loaded. */
  workerBuilds: number;
  /** What the last of them cost the event loop, ms (absent before the first). */
  lastWorkerRound?: RoundTimings;
}

/**
 * Default backlog size for a worker build. A round costs the event loop a copy of the batch's vectors,
 * a write of the serving graph for the worker (when it has nodes and the worker holds no copy of
 * it, about 1 ms per 1,000 nodes) and the swap; inserting the same rows in-process costs about 0.3 ms
 * each at 100,000 × 128 (bench/RESULTS.md, "vss-onboard"). At 10,000 an ingestion's first 10,000
 * points were inserted on the event loop, in slices between its batches, before the worker started.
 */
export const WORKER_BUILD_ROWS = 1_000;

/**
 * Default backlog size for a parallel build. Its graph depends on how the threads interleave, so
 * small rounds (a few seconds of inserts) stay on one thread and come out the same every time; what
 * the second core saves is in the large rounds after a bulk ingestion (bench/RESULTS.md, "vss-ingest").
 */
export const PARALLEL_BUILD_ROWS = 10_000;

/** Where graph files to and from the build worker go, inside the data directory. */
const GRAPH_SCRATCH = '.graph-builds';

function parallelBuild(options: EmbeddedVectorDbOptions): IndexingOptions['parallel'] {
  const minRows = options.parallelBuildRows ?? PARALLEL_BUILD_ROWS;
  const threads = options.buildThreads ?? availableParallelism();
  return minRows > 0 && threads > 1 ? { minRows, threads } : undefined;
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class EmbeddedVectorDb implements VectorDb {
  private readonly collections = new Map<string, Collection>();
  /** With `dir`: snapshots and logs. */
  private directory: DataDirectory | undefined;
  private readonly query: QueryOptions;
  /** Queries of one batch in flight at once: the search pool's threads, or 1 on the event loop. */
  private readonly lanes: number;
  private readonly indexing: IndexingOptions<Collection>;
  private readonly searchSliceMs: number;
  private closed = false;

  private constructor(options: EmbeddedVectorDbOptions) {
    const poolThreads = options.searchThreads === 0 ? 0 : sizeSearchPool(options.searchThreads);
    this.query = { planner: { ...PLANNER_DEFAULTS, ...options.planner }, pool: poolThreads > 0 };
    this.lanes = Math.max(1, poolThreads);
    const workerRows = options.workerBuildRows ?? WORKER_BUILD_ROWS;
    this.indexing = {
      sliceMs: options.indexSliceMs ?? 10,
      workerRows: workerRows > 0 ? workerRows : Number.POSITIVE_INFINITY,
      scratchDir: options.dir ? join(options.dir, GRAPH_SCRATCH) : undefined,
      parallel: parallelBuild(options),
      // A build that ended is saved (data-directory.ts): a restart serves the graph, not a part of it.
      onBuilt: (collection) => this.directory?.graphBuilt(collection),
    };
    if (this.indexing.parallel) warnIfNoParallelBuilder();
    warnIfNoNativeGraph();
    this.searchSliceMs = options.searchSliceMs ?? 20;
  }

  /**
   * Opens the database, loading every collection in `dir` (its newest snapshot, then its log). A
   * directory another live process has open is FAILED_PRECONDITION naming that process.
   */
  static async open(options: EmbeddedVectorDbOptions = {}): Promise<EmbeddedVectorDb> {
    const db = new EmbeddedVectorDb(options);
    if (options.dir) {
      const { directory, recovered } = await DataDirectory.open(
        {
          dir: options.dir,
          wal: options.wal ?? true,
          walSnapshotBytes: options.walSnapshotBytes ?? 128 * 1024 * 1024,
          snapshotIntervalMs: options.snapshotIntervalMs ?? 60_000,
          compactionThreshold: options.compactionThreshold ?? 0.1,
          indexing: db.indexing,
          onSnapshotError: options.onSnapshotError,
        },
        db.collections,
      );
      db.directory = directory;
      for (const collection of recovered) {
        db.collections.set(collection.name, collection);
        collection.indexer.kick();
      }
    }
    return db;
  }

  async createCollection(spec: CollectionSpec): Promise<void> {
    this.assertOpen();
    const validated = validateCollectionSpec(spec);
    const { name } = validated;
    const add = () => {
      this.collections.set(name, new Collection(validated, { indexing: this.indexing }));
    };
    if (this.existing(validated)) return;
    if (!this.directory) return add();
    // Resolves once the creation is durable; a concurrent create of the same name waits for it.
    await this.directory.create(validated, () => !this.existing(validated), add);
  }

  async dropCollection(name: string): Promise<boolean> {
    this.assertOpen();
    validateCollectionName(name);
    const collection = this.collections.get(name);
    if (collection) {
      this.collections.delete(name);
      collection.indexer.stop();
      await collection.indexer.settled();
    }
    await this.directory?.drop(name);
    return collection !== undefined;
  }

  async listCollections(): Promise<string[]> {
    this.assertOpen();
    return [...this.collections.keys()].sort();
  }

  async collectionInfo(name: string): Promise<CollectionInfo> {
    const collection = this.collection(name);
    const { spec, store, indexer } = collection;
    return {
      name: spec.name,
      dimension: spec.dimension,
      distance: spec.distance,
      hnsw: { ...spec.hnsw },
      points: store.liveCount,
      indexedPoints: store.indexedCount,
      status: indexer.failure ? 'FAILED' : collection.pendingCount > 0 ? 'INDEXING' : 'READY',
    };
  }

  // Writes: validate, log (which refuses before anything changes when the log has failed), apply in
  // memory in the same synchronous step (so log order is apply order), then wait for the log.

  async upsert(name: string, points: readonly PointInput[]): Promise<void> {
    const collection = this.collection(name);
    const validated = validatePoints(points, collection.spec.dimension, name);
    const durable = this.directory?.wal(name)?.appendUpsert(validated, collection.spec.dimension);
    collection.upsert(validated);
    await durable;
  }

  async delete(name: string, ids: readonly string[]): Promise<number> {
    const collection = this.collection(name);
    const validated = validateIds(ids);
    const durable = this.directory?.wal(name)?.appendDelete(validated);
    const deleted = collection.delete(validated);
    await durable;
    return deleted;
  }

  async setPayload(name: string, ids: readonly string[], payload: Payload): Promise<number> {
    const collection = this.collection(name);
    const validatedIds = validateIds(ids);
    const validated = validatePayload(payload, 'payload');
    const durable = this.directory?.wal(name)?.appendSetPayload(validatedIds, validated);
    const updated = collection.setPayload(validatedIds, validated);
    await durable;
    return updated;
  }

  async getPoints(
    name: string,
    ids: readonly string[],
    options: GetPointsOptions = {},
  ): Promise<(StoredPoint | undefined)[]> {
    const { store } = this.collection(name);
    const withVector = options.withVector ?? true;
    const withPayload = options.withPayload ?? true;
    return validateIds(ids).map((id) => {
      const row = store.rowOf.get(id);
      if (row === undefined) return undefined;
      const point: StoredPoint = { id };
      if (withVector) point.vector = store.vector(row).slice();
      const payload = selectPayload(store.payloads[row]!, withPayload);
      if (payload) point.payload = payload;
      return point;
    });
  }

  async search(request: SearchRequest): Promise<SearchHit[][]> {
    const { collection, prepare } = this.prepareSearch(request);
    graphBuilder.noteSearch();
    const { store, spec } = collection;
    const results: SearchHit[][] = new Array(request.queries.length);
    const hitsOf = (rows: number[], keys: number[]): SearchHit[] => {
      // Read in the step that found the rows: a drop or close while the walk ran ends the search.
      this.assertCurrent(collection);
      return rows.map((row, at) => {
        const hit: SearchHit = { id: store.ids[row]!, score: scoreOf(keys[at]!, spec.distance) };
        const payload = selectPayload(store.payloads[row]!, request.withPayload);
        if (payload) hit.payload = payload;
        if (request.withVector) hit.vector = store.vector(row).slice();
        return hit;
      });
    };
    // Up to one query per search thread at a time: a batch uses the cores as concurrent requests do.
    let next = 0;
    let failed = false;
    let sliceStart = performance.now();
    const lane = async () => {
      for (let i = next++; i < request.queries.length && !failed; i = next++) {
        if (performance.now() - sliceStart > this.searchSliceMs) {
          await yieldToLoop();
          this.assertCurrent(collection);
          sliceStart = performance.now();
        }
        try {
          results[i] = await runQuery(collection, () => prepare(i), this.query, hitsOf);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    };
    const lanes = Math.min(request.queries.length, this.lanes);
    await Promise.all(Array.from({ length: lanes }, lane));
    return results;
  }

  /** The plan each query of `request` would take, without running it. */
  async explain(request: SearchRequest): Promise<QueryExplanation[]> {
    const { collection, prepare } = this.prepareSearch(request);
    return request.queries.map((_, i) => explainQuery(collection, prepare(i), this.query.planner));
  }

  /** Counters of the paths searches took in a collection. */
  searchStats(name: string): SearchStats {
    return { ...this.collection(name).stats };
  }

  /** Rows and graph nodes of a collection, deleted ones included (compaction shows here). */
  storageStats(name: string): StorageStats {
    const { store, graph, indexer } = this.collection(name);
    const last = indexer.lastWorkerRound;
    return {
      rows: store.highWater,
      freeRows: store.highWater - store.liveCount,
      graphNodes: graph.size + graph.deletedCount,
      deletedGraphNodes: graph.deletedCount,
      compacting: indexer.compacting,
      buildingInWorker: indexer.building,
      workerBuilds: indexer.workerBuilds,
      ...(last ? { lastWorkerRound: { ...last } } : {}),
    };
  }

  /** Holds the collection's backlog out of the graph until {@link resumeIndexing}. */
  pauseIndexing(name: string): void {
    this.collection(name).indexer.pause();
  }

  resumeIndexing(name: string): void {
    this.collection(name).indexer.resume();
  }

  /** Resolves once every point of the collection is indexed. */
  async waitForIndexing(name: string): Promise<void> {
    await this.collection(name).indexer.whenIdle();
  }

  /** Rebuilds the collection's graph without the nodes of deleted points. */
  async compact(name: string): Promise<void> {
    await this.collection(name).indexer.compact();
  }

  /** Snapshots one collection, or every collection that changed since its last snapshot. */
  async snapshot(name?: string): Promise<void> {
    this.assertOpen();
    if (!this.directory) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        'vector database has no snapshot directory (open it with `dir`)',
      );
    }
    if (name !== undefined) await this.directory.snapshot(this.collection(name), true);
    else await this.directory.snapshotChanged(true);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const collection of this.collections.values()) collection.indexer.pause();
    try {
      // A worker build is ended (its rows stay pending and are saved so); wait for the worker to stop.
      await Promise.all([...this.collections.values()].map((c) => c.indexer.settled()));
      await this.directory?.close();
    } finally {
      for (const collection of this.collections.values()) collection.indexer.stop();
      this.collections.clear();
    }
  }

  /** The collection `spec` names, when it exists with that spec; ALREADY_EXISTS when with another. */
  private existing(spec: ValidatedSpec): boolean {
    const existing = this.collections.get(spec.name);
    if (!existing) return false;
    if (sameSpec(existing.spec, spec)) return true;
    throw collectionConflict(spec.name, existing.spec, spec);
  }

  /** Validates the whole request up front; `prepare(i)` builds query i against current state. */
  private prepareSearch(request: SearchRequest): {
    collection: Collection;
    prepare: (i: number) => PreparedQuery;
  } {
    validateSearchShape(request);
    const collection = this.collection(request.collection);
    const { store, payloads, spec } = collection;
    const shared = compileFilters(request.filters, 'filters');
    const sharedKey = shared.length > 0 ? filtersKey(request.filters!) : '';
    const queries = request.queries.map((query, i) => ({
      vector: validateVector(query.vector, spec.dimension, `queries[${i}].vector`, spec.name, false),
      filters: compileFilters(query.filters, `queries[${i}].filters`),
      excludeIds: query.excludeIds ?? [],
    }));
    const prepare = (i: number): PreparedQuery => {
      const query = queries[i]!;
      // The shared filters' rows, cached by the collection until it changes.
      let matches = shared.length > 0 ? collection.filterMatches(sharedKey, shared) : undefined;
      if (query.filters.length > 0) matches = payloads.match(query.filters, matches ?? store.live);
      const excluded = new Set<number>();
      for (const id of query.excludeIds) {
        const row = store.rowOf.get(id);
        if (row !== undefined) excluded.add(row);
      }
      return {
        vector: query.vector,
        matches,
        limit: request.limit,
        excluded,
        indexedOnly: request.indexedOnly ?? false,
        efSearch: request.efSearch,
        exact: request.exact ?? false,
      };
    };
    return { collection, prepare };
  }

  private collection(name: string): Collection {
    this.assertOpen();
    const collection = this.collections.get(name);
    if (!collection) {
      validateCollectionName(name, 'collection');
      throw collectionNotFound(name);
    }
    return collection;
  }

  private assertOpen(): void {
    if (this.closed) throw closedError();
  }

  /** Throws unless the database is open and `collection` is still the one of its name (not dropped). */
  private assertCurrent(collection: Collection): void {
    this.assertOpen();
    if (this.collections.get(collection.name) !== collection) throw collectionNotFound(collection.name);
  }
}
