/**
 * The embedded `VectorDb`: in-process HNSW collections (hnswlib-node) with payload indexes, a query
 * planner, a background indexer, a write-ahead log and snapshots on disk. The default for
 * `npm start`; one process owns its directory (a lock file says which).
 *
 * Durability, with `dir`: every create, upsert, delete and setPayload is applied in memory and
 * appended to the collection's write-ahead log, and its call resolves once an fdatasync covers it
 * (concurrent calls share one), so an acknowledged write survives a crash or SIGKILL. Reads may see
 * a write a moment before it is acknowledged. Indexing is not part of the acknowledgement: the graph
 * catches up in the background, and a reopened collection re-indexes what its snapshot had pending.
 * Snapshots (periodic, early when a log grows large, on `snapshot()` and on `close()`) bound the
 * replay and truncate the log. Files: collection-files.ts.
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
  type ValidatedSpec,
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
import { CollectionFiles, type StorageOptions } from './collection-files.js';
import { explainQuery, type PreparedQuery, type QueryExplanation, runQuery } from './collection-search.js';
import { scoreOf } from './exact-scan.js';
import { PLANNER_DEFAULTS, type PlannerSettings } from './query-planner.js';
import type { WriteAheadLog } from './write-ahead-log.js';

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

/** What a second process that finds the directory locked should do instead. */
const ONE_OWNER_HINT =
  'the embedded vector database lives inside one process: run the vss components together in one process (`lattice vss`), or use a vector database server (Qdrant: LATTICE_VSS_VECTOR_DB=qdrant)';

export class EmbeddedVectorDb implements VectorDb {
  private readonly collections = new Map<string, Collection>();
  /** With `dir`: each collection's snapshots and log. */
  private readonly files = new Map<string, CollectionFiles>();
  /** Per collection name, the tail of its disk work (create, snapshots, drop), which runs one at a time. */
  private readonly diskWork = new Map<string, Promise<void>>();
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

  /**
   * Opens the database, loading every collection in `dir` (its newest snapshot, then its log). A
   * directory another live process has open is FAILED_PRECONDITION naming that process.
   */
  static async open(options: EmbeddedVectorDbOptions = {}): Promise<EmbeddedVectorDb> {
    const db = new EmbeddedVectorDb(options);
    if (options.dir) {
      db.lock = lockDirectory(options.dir, 'vector database directory', ONE_OWNER_HINT);
      try {
        for (const { collection, files } of await CollectionFiles.recoverAll(db.storage())) {
          db.collections.set(collection.name, collection);
          db.files.set(collection.name, files);
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
    const { name } = validated;
    const create = () => new Collection(validated, { indexSliceMs: this.indexSliceMs });
    if (!this.options.dir) {
      if (!this.existing(validated)) this.collections.set(name, create());
      return;
    }
    if (this.existing(validated)) return;
    // Resolves once the creation is durable; a concurrent create of the same name waits for it.
    await this.onDisk(name, async () => {
      if (this.existing(validated)) return;
      const files = await CollectionFiles.create(validated, this.storage());
      this.collections.set(name, create());
      this.files.set(name, files);
    });
  }

  async dropCollection(name: string): Promise<boolean> {
    this.assertOpen();
    validateCollectionName(name);
    const collection = this.collections.get(name);
    if (collection) {
      this.collections.delete(name);
      collection.indexer.stop();
    }
    const files = this.files.get(name);
    this.files.delete(name);
    if (files) await this.onDisk(name, () => files.drop());
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
    const durable = this.wal(name)?.appendUpsert(validated, collection.spec.dimension);
    collection.upsert(validated);
    await durable;
  }

  async delete(name: string, ids: readonly string[]): Promise<number> {
    const collection = this.collection(name);
    const validated = validateIds(ids);
    const durable = this.wal(name)?.appendDelete(validated);
    const deleted = collection.delete(validated);
    await durable;
    return deleted;
  }

  async setPayload(name: string, ids: readonly string[], payload: Payload): Promise<number> {
    const collection = this.collection(name);
    const validatedIds = validateIds(ids);
    const validated = validatePayload(payload, 'payload');
    const durable = this.wal(name)?.appendSetPayload(validatedIds, validated);
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
        // No compaction here: a graph rebuild can take minutes; the next snapshot does it. A failed
        // snapshot fails the close, but with the log on nothing acknowledged is lost.
        const saved = await Promise.allSettled(changed.map((c) => this.snapshotCollection(c, false)));
        await Promise.all(this.diskWork.values());
        const failed = saved.find((result) => result.status === 'rejected');
        if (failed) throw failed.reason;
      }
    } finally {
      for (const collection of this.collections.values()) collection.indexer.stop();
      await Promise.all([...this.files.values()].map((files) => files.close()));
      this.collections.clear();
      this.files.clear();
      this.lock?.release();
    }
  }

  private storage(): StorageOptions {
    return {
      root: this.options.dir!,
      wal: this.options.wal ?? true,
      walSnapshotBytes: this.options.walSnapshotBytes ?? 128 * 1024 * 1024,
      indexSliceMs: this.indexSliceMs,
      onWalFull: (name) => {
        const collection = this.collections.get(name);
        if (collection && !this.closed) this.snapshotInBackground(collection);
      },
    };
  }

  private wal(name: string): WriteAheadLog | undefined {
    return this.files.get(name)?.wal;
  }

  /** The collection `spec` names, when it exists with that spec; ALREADY_EXISTS when with another. */
  private existing(spec: ValidatedSpec): boolean {
    const existing = this.collections.get(spec.name);
    if (!existing) return false;
    if (sameSpec(existing.spec, spec)) return true;
    throw collectionConflict(spec.name, existing.spec, spec);
  }

  private snapshotChanged(): void {
    for (const collection of this.collections.values()) {
      if (collection.version !== collection.savedVersion) this.snapshotInBackground(collection);
    }
  }

  private snapshotInBackground(collection: Collection): void {
    this.snapshotCollection(collection, true).catch((err: unknown) => {
      if (this.options.onSnapshotError) this.options.onSnapshotError(err, collection.name);
      else process.emitWarning(`snapshot of vector collection "${collection.name}" failed: ${String(err)}`);
    });
  }

  /** Snapshots run one at a time per collection, in line with its creation and drop. */
  private snapshotCollection(collection: Collection, allowCompaction: boolean): Promise<void> {
    return this.onDisk(collection.name, async () => {
      if (this.collections.get(collection.name) !== collection) return; // dropped meanwhile
      const { graph, indexer } = collection;
      const nodes = graph.size + graph.deletedCount;
      if (allowCompaction && !indexer.isPaused && graph.deletedCount > this.compactionThreshold * nodes) {
        await indexer.compact();
        if (this.collections.get(collection.name) !== collection) return;
      }
      await this.files.get(collection.name)!.snapshot(collection);
    });
  }

  /** Runs `work` after the disk work already queued for collection `name`. */
  private onDisk<T>(name: string, work: () => Promise<T>): Promise<T> {
    const next = (this.diskWork.get(name) ?? Promise.resolve()).then(work);
    const tail = next.then(
      () => {},
      () => {},
    );
    this.diskWork.set(name, tail);
    void tail.then(() => {
      if (this.diskWork.get(name) === tail) this.diskWork.delete(name);
    });
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
