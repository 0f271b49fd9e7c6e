/**
 * The embedded `VectorDb`: in-process HNSW collections (hnswlib-node) with payload indexes, a query
 * planner, a background indexer and snapshots on disk. The default for `npm start`; one process owns
 * its directory (a lock file says which).
 *
 * Durability: writes live in memory until the next snapshot (periodic, on `snapshot()`, and on
 * `close()`); a crash loses what came after the last one. Queue consumers re-deliver unacknowledged
 * events, so the loss is bounded by what was acknowledged since that snapshot.
 */
import { type DirLock, lockDirectory } from '../../dir-lock.js';
import { LatticeError } from '../../errors.js';
import { compileFilters, filtersKey } from '../filters.js';
import {
  closedError,
  collectionConflict,
  collectionNotFound,
  sameSpec,
  selectPayload,
  validateCollectionName,
  validateCollectionSpec,
  validateIds,
  validatePayload,
  validatePoints,
  validateSearchShape,
  validateVector,
} from '../validation.js';
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
} from '../vector-db.js';
import { Collection, type SearchStats } from './collection.js';
import { explainQuery, type PreparedQuery, type QueryExplanation, runQuery } from './collection-search.js';
import { scoreOf } from './exact-scan.js';
import { PLANNER_DEFAULTS, type PlannerSettings } from './query-planner.js';
import { loadSnapshots, removeSnapshots, writeSnapshot } from './snapshot.js';

export interface EmbeddedVectorDbOptions {
  /** Snapshot directory; without it collections live in memory only. */
  dir?: string;
  /** Snapshot changed collections this often (ms); 0 turns it off. Default 60,000 (with `dir`). */
  snapshotIntervalMs?: number;
  /** A snapshot first rebuilds the graph when more than this share of its nodes are deleted points. */
  compactionThreshold?: number;
  /** Longest time the indexer holds the event loop in one go, ms. Default 10. */
  indexSliceMs?: number;
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
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class EmbeddedVectorDb implements VectorDb {
  private readonly collections = new Map<string, Collection>();
  private readonly seqs = new Map<string, number>();
  private readonly snapshotting = new Map<string, Promise<void>>();
  private readonly planner: PlannerSettings;
  private readonly indexSliceMs: number;
  private readonly searchSliceMs: number;
  private readonly compactionThreshold: number;
  private timer: NodeJS.Timeout | undefined;
  private lock: DirLock | undefined;
  private closed = false;

  private constructor(private readonly options: EmbeddedVectorDbOptions) {
    this.planner = { ...PLANNER_DEFAULTS, ...options.planner };
    this.indexSliceMs = options.indexSliceMs ?? 10;
    this.searchSliceMs = options.searchSliceMs ?? 20;
    this.compactionThreshold = options.compactionThreshold ?? 0.1;
  }

  /** Opens the database, loading every collection snapshotted in `dir`. */
  static async open(options: EmbeddedVectorDbOptions = {}): Promise<EmbeddedVectorDb> {
    const db = new EmbeddedVectorDb(options);
    if (options.dir) {
      db.lock = lockDirectory(options.dir, 'vector database directory');
      try {
        for (const loaded of await loadSnapshots(options.dir)) {
          const collection = new Collection(loaded.spec, {
            store: loaded.store,
            graph: loaded.graph,
            indexSliceMs: db.indexSliceMs,
          });
          collection.savedVersion = collection.version;
          db.collections.set(loaded.spec.name, collection);
          db.seqs.set(loaded.spec.name, loaded.seq);
          collection.indexer.kick();
        }
      } catch (err) {
        db.lock.release();
        throw err;
      }
      const interval = options.snapshotIntervalMs ?? 60_000;
      if (interval > 0) {
        db.timer = setInterval(() => db.snapshotChanged(), interval);
        db.timer.unref();
      }
    }
    return db;
  }

  async createCollection(spec: CollectionSpec): Promise<void> {
    this.assertOpen();
    const validated = validateCollectionSpec(spec);
    const existing = this.collections.get(validated.name);
    if (existing) {
      if (sameSpec(existing.spec, validated)) return;
      throw collectionConflict(validated.name, existing.spec, validated);
    }
    await this.snapshotting.get(validated.name)?.catch(() => {});
    this.collections.set(validated.name, new Collection(validated, { indexSliceMs: this.indexSliceMs }));
  }

  async dropCollection(name: string): Promise<boolean> {
    this.assertOpen();
    validateCollectionName(name);
    const collection = this.collections.get(name);
    if (collection) {
      this.collections.delete(name);
      collection.indexer.stop();
    }
    if (!this.options.dir) return collection !== undefined;
    await this.snapshotting.get(name)?.catch(() => {});
    this.seqs.delete(name);
    await removeSnapshots(this.options.dir, name);
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

  async upsert(name: string, points: readonly PointInput[]): Promise<void> {
    const collection = this.collection(name);
    collection.upsert(validatePoints(points, collection.spec.dimension, name));
  }

  async delete(name: string, ids: readonly string[]): Promise<number> {
    const collection = this.collection(name);
    return collection.delete(validateIds(ids));
  }

  async setPayload(name: string, ids: readonly string[], payload: Payload): Promise<number> {
    const collection = this.collection(name);
    return collection.setPayload(validateIds(ids), validatePayload(payload, 'payload'));
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
    const { store, spec } = collection;
    const results: SearchHit[][] = [];
    let sliceStart = performance.now();
    for (let i = 0; i < request.queries.length; i++) {
      if (performance.now() - sliceStart > this.searchSliceMs) {
        await yieldToLoop();
        this.assertOpen();
        sliceStart = performance.now();
      }
      const { rows, keys } = runQuery(collection, prepare(i), this.planner);
      results.push(
        rows.map((row, at) => {
          const hit: SearchHit = { id: store.ids[row]!, score: scoreOf(keys[at]!, spec.distance) };
          const payload = selectPayload(store.payloads[row]!, request.withPayload);
          if (payload) hit.payload = payload;
          if (request.withVector) hit.vector = store.vector(row).slice();
          return hit;
        }),
      );
    }
    return results;
  }

  /** The plan each query of `request` would take, without running it. */
  async explain(request: SearchRequest): Promise<QueryExplanation[]> {
    const { collection, prepare } = this.prepareSearch(request);
    return request.queries.map((_, i) => explainQuery(collection, prepare(i), this.planner));
  }

  /** Counters of the paths searches took in a collection. */
  searchStats(name: string): SearchStats {
    return { ...this.collection(name).stats };
  }

  /** Rows and graph nodes of a collection, deleted ones included (compaction shows here). */
  storageStats(name: string): StorageStats {
    const { store, graph, indexer } = this.collection(name);
    return {
      rows: store.highWater,
      freeRows: store.highWater - store.liveCount,
      graphNodes: graph.size + graph.deletedCount,
      deletedGraphNodes: graph.deletedCount,
      compacting: indexer.compacting,
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
    if (!this.options.dir) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        'vector database has no snapshot directory (open it with `dir`)',
      );
    }
    if (name !== undefined) {
      await this.snapshotCollection(this.collection(name), true);
      return;
    }
    await Promise.all(
      [...this.collections.values()]
        .filter((c) => c.version !== c.savedVersion)
        .map((c) => this.snapshotCollection(c, true)),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const collection of this.collections.values()) collection.indexer.pause();
    try {
      if (this.options.dir) {
        const changed = [...this.collections.values()].filter((c) => c.version !== c.savedVersion);
        // No compaction here: a graph rebuild can take minutes; the next snapshot does it.
        await Promise.all(changed.map((c) => this.snapshotCollection(c, false)));
        await Promise.all([...this.snapshotting.values()].map((p) => p.catch(() => {})));
      }
    } finally {
      for (const collection of this.collections.values()) collection.indexer.stop();
      this.collections.clear();
      this.lock?.release();
    }
  }

  private snapshotChanged(): void {
    for (const collection of this.collections.values()) {
      if (collection.version === collection.savedVersion) continue;
      this.snapshotCollection(collection, true).catch((err: unknown) => {
        if (this.options.onSnapshotError) this.options.onSnapshotError(err, collection.name);
        else process.emitWarning(`snapshot of vector collection "${collection.name}" failed: ${String(err)}`);
      });
    }
  }

  /** Snapshots are serialised per collection; a drop waits for the one in flight. */
  private snapshotCollection(collection: Collection, allowCompaction: boolean): Promise<void> {
    const dir = this.options.dir!;
    const previous = this.snapshotting.get(collection.name) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      .then(async () => {
        if (this.collections.get(collection.name) !== collection) return; // dropped meanwhile
        const { graph, indexer } = collection;
        const nodes = graph.size + graph.deletedCount;
        if (allowCompaction && !indexer.isPaused && graph.deletedCount > this.compactionThreshold * nodes) {
          await indexer.compact();
          if (this.collections.get(collection.name) !== collection) return;
        }
        const seq = (this.seqs.get(collection.name) ?? 0) + 1;
        this.seqs.set(collection.name, seq);
        await writeSnapshot(dir, collection, seq);
      });
    this.snapshotting.set(collection.name, next);
    return next;
  }

  /** Validates the whole request up front; `prepare(i)` builds query i against current state. */
  private prepareSearch(request: SearchRequest): {
    collection: Collection;
    prepare: (i: number) => PreparedQuery;
  } {
    const { offsetOf } = validateSearchShape(request);
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
        offset: offsetOf(i),
        limit: request.limit,
        excluded,
        indexedOnly: request.indexedOnly ?? false,
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
}
