/**
 * One collection of the embedded engine: the point store, payload indexes, HNSW graph and the backlog
 * of points waiting for the graph. Writes land in the store and payload indexes at once (visible to
 * searches that are not `indexedOnly`) and queue for the graph; the {@link Indexer} inserts them in
 * short time slices so a large upsert never blocks the event loop for long.
 */

import type { CompiledFilter } from '../../filters.js';
import type { ValidatedPoint, ValidatedSpec } from '../../validation.js';
import type { Payload } from '../../vector-db.js';
import { HnswGraph } from '../index/hnsw-graph.js';
import type { IndexTarget } from '../index/index-target.js';
import { Indexer } from '../index/indexer.js';
import type { IndexingOptions } from '../index/indexing-options.js';
import { Bitset } from '../storage/bitset.js';
import { PayloadIndex } from '../storage/payload-index.js';
import { INDEXED, PENDING, PointStore } from '../storage/point-store.js';

/** Counters of the paths queries took, for tests and metrics. */
export interface SearchStats {
  exactScans: number;
  graphSearches: number;
  filteredGraphSearches: number;
  /** Graph searches that came back short and were answered by an exact scan instead. */
  fallbacks: number;
  /** Queries that also scanned the backlog (not `indexedOnly`, backlog not empty). */
  backlogScans: number;
}

/** Distinct request-level filter sets whose rows a collection keeps. */
const MAX_CACHED_FILTERS = 16;

export class Collection implements IndexTarget {
  readonly store: PointStore;
  readonly payloads: PayloadIndex;
  private current: HnswGraph;
  readonly indexer: Indexer<Collection>;
  readonly stats: SearchStats = {
    exactScans: 0,
    graphSearches: 0,
    filteredGraphSearches: 0,
    fallbacks: 0,
    backlogScans: 0,
  };
  /** Bumped by every write; snapshots compare it with the value they last saved. */
  version = 0;
  savedVersion = 0;
  /**
   * Bumped whenever the graph gains rows or is swapped (a build is not a write, yet a snapshot
   * without it restarts with the older, smaller graph); snapshots compare it like `version`.
   */
  graphVersion = 0;
  savedGraphVersion = 0;
  /** Indexed rows at the capture of the last snapshot (what a restart would load). */
  savedIndexedCount = 0;
  /** Date.now() when the last snapshot was committed (0: none since the load). */
  savedAt = 0;
  /**
   * Rows that were pending when the collection was loaded and are still pending: a restart's backlog,
   * mostly rows the graph held before it (the snapshot predates their indexing, or the log replayed
   * them). `indexedOnly` searches scan them exactly until the graph has them again, so a restart
   * never serves a partial index. A row written after the load leaves the set.
   */
  private recovered: Bitset | undefined;
  recoveringCount = 0;
  private backlog: number[] = [];
  private backlogHead = 0;
  /** Rows waiting in the backlog (each counted once). */
  pendingCount = 0;
  /**
   * Rows of recent request-level filter sets, valid for one `version`: a serving variant sends its
   * membership filter with every search, and recomputing it cost several passes over the bitsets.
   */
  private readonly filterRows = new Map<string, Bitset>();
  private filterRowsVersion = -1;
  private readonly indexedRows = new WeakMap<
    Bitset,
    { version: number; indexedCount: number; rows: Bitset; count: number }
  >();

  constructor(
    readonly spec: ValidatedSpec,
    options: { graph?: HnswGraph; store?: PointStore; indexing: IndexingOptions<Collection> },
  ) {
    this.store = options.store ?? new PointStore(spec.dimension);
    this.payloads = new PayloadIndex(() => this.store.capacity);
    this.current = options.graph ?? new HnswGraph(spec.distance, spec.dimension, spec.hnsw);
    this.indexer = new Indexer<Collection>(this, options.indexing);
    if (options.store) this.restoreDerived();
  }

  /** After a load: payload indexes from the payloads, the backlog from the pending rows. */
  private restoreDerived(): void {
    const { store } = this;
    store.live.forEach((row) => {
      this.payloads.add(row, store.payloads[row]!);
      if (store.state[row] === PENDING) {
        this.backlog.push(row);
        this.pendingCount++;
      }
    });
  }

  get name(): string {
    return this.spec.name;
  }

  get graph(): HnswGraph {
    return this.current;
  }

  /** Swaps in a graph built elsewhere (a compaction, a worker build). */
  set graph(graph: HnswGraph) {
    this.current = graph;
    this.graphVersion++;
  }

  /** Writes or graph progress since the last snapshot. */
  get unsaved(): boolean {
    return this.version !== this.savedVersion || this.graphVersion !== this.savedGraphVersion;
  }

  /** After a load (snapshot and log replay): the rows still pending are the restart's backlog. */
  markRecovered(): void {
    this.savedIndexedCount = this.store.indexedCount;
    if (this.pendingCount === 0) return;
    const { store } = this;
    this.recovered = store.live.copy().andNot(store.indexed);
    this.recoveringCount = this.recovered.count();
  }

  /** Rows of the restart's backlog still pending (read-only), while there are any. */
  get recoveringRows(): Bitset | undefined {
    return this.recoveringCount > 0 ? this.recovered : undefined;
  }

  private unrecover(row: number): void {
    if (this.recovered?.has(row)) {
      this.recovered.delete(row);
      if (--this.recoveringCount === 0) this.recovered = undefined;
    }
  }

  upsert(points: readonly ValidatedPoint[]): void {
    const { store } = this;
    for (const point of points) {
      let row = store.rowOf.get(point.id);
      if (row === undefined) {
        row = store.allocate(point.id);
        store.setVector(row, point.vector);
        this.enqueue(row);
      } else {
        this.payloads.remove(row, store.payloads[row]!);
        if (!store.sameVector(row, point.vector)) {
          store.setVector(row, point.vector);
          // The graph holds the old vector: hide it until the indexer re-inserts the row.
          this.removeFromGraph(row);
          this.unrecover(row);
          if (store.state[row] !== PENDING) this.enqueue(row);
        }
      }
      store.payloads[row] = point.payload;
      this.payloads.add(row, point.payload);
    }
    this.version++;
    this.indexer.written();
  }

  delete(ids: readonly string[]): number {
    const { store } = this;
    let deleted = 0;
    for (const id of ids) {
      const row = store.rowOf.get(id);
      if (row === undefined) continue;
      this.payloads.remove(row, store.payloads[row]!);
      this.removeFromGraph(row);
      if (store.state[row] === PENDING) this.pendingCount--;
      this.unrecover(row);
      store.release(row);
      deleted++;
    }
    if (deleted > 0) this.version++;
    return deleted;
  }

  setPayload(ids: readonly string[], payload: Payload): number {
    const { store } = this;
    let updated = 0;
    for (const id of new Set(ids)) {
      const row = store.rowOf.get(id);
      if (row === undefined) continue;
      const current = store.payloads[row]!;
      for (const [field, value] of Object.entries(payload)) {
        const old = current[field];
        if (old !== undefined && Object.hasOwn(current, field)) this.payloads.removeValue(row, field, old);
        current[field] = Array.isArray(value) ? [...value] : value;
        this.payloads.addValue(row, field, value);
      }
      updated++;
    }
    if (updated > 0) this.version++;
    return updated;
  }

  /** Live rows passing `filters` (compiled from the filters `key` identifies); treat as read-only. */
  filterMatches(key: string, filters: readonly CompiledFilter[]): Bitset {
    if (this.filterRowsVersion !== this.version) {
      this.filterRows.clear();
      this.filterRowsVersion = this.version;
    }
    let rows = this.filterRows.get(key);
    if (!rows) {
      rows = this.payloads.match(filters, this.store.live);
      if (this.filterRows.size >= MAX_CACHED_FILTERS) {
        this.filterRows.delete(this.filterRows.keys().next().value!);
      }
      this.filterRows.set(key, rows);
    }
    return rows;
  }

  /**
   * `matches` ∩ indexed rows and its size; read-only, reused while neither the collection's version
   * nor its indexed count changes (within one version, indexing only ever adds rows).
   */
  indexedMatches(matches: Bitset): { rows: Bitset; count: number } {
    const { indexedCount } = this.store;
    const known = this.indexedRows.get(matches);
    if (known && known.version === this.version && known.indexedCount === indexedCount) return known;
    const rows = matches.copy().and(this.store.indexed);
    const fresh = { version: this.version, indexedCount, rows, count: rows.count() };
    this.indexedRows.set(matches, fresh);
    return fresh;
  }

  /** The next row the indexer should insert, or undefined when the backlog is empty. */
  nextPending(): number | undefined {
    while (this.backlogHead < this.backlog.length) {
      const row = this.backlog[this.backlogHead++]!;
      if (this.store.state[row] === PENDING) return row;
    }
    this.backlog = [];
    this.backlogHead = 0;
    return undefined;
  }

  /** Inserts a pending row into the graph (called by the indexer). */
  index(row: number): void {
    this.graph.insert(row, this.store.vector(row));
    this.indexer.touched(row);
    this.markIndexed(row);
  }

  /** A pending row the graph now holds with its current vector (a worker build put it there). */
  markIndexed(row: number): void {
    this.store.setState(row, INDEXED);
    this.pendingCount--;
    this.graphVersion++;
    this.unrecover(row);
  }

  /**
   * Empties the backlog into a list: the rows still pending, each once, in the order
   * {@link nextPending} would have returned them. They stay pending (searches scan them) until the
   * caller marks them indexed or puts them back with {@link requeue}.
   */
  takeBacklog(): Uint32Array {
    const { state } = this.store;
    const seen = new Bitset(this.store.capacity);
    const rows = new Uint32Array(this.pendingCount);
    let count = 0;
    for (let i = this.backlogHead; i < this.backlog.length; i++) {
      const row = this.backlog[i]!;
      if (state[row] !== PENDING || seen.has(row)) continue;
      seen.add(row);
      rows[count++] = row;
    }
    this.backlog = [];
    this.backlogHead = 0;
    return rows.subarray(0, count);
  }

  /** Puts rows taken by {@link takeBacklog} back at the head of the backlog (those still pending). */
  requeue(rows: ArrayLike<number>): void {
    const { state } = this.store;
    const head: number[] = [];
    for (let i = 0; i < rows.length; i++) if (state[rows[i]!] === PENDING) head.push(rows[i]!);
    if (head.length === 0) return;
    this.backlog = head.concat(this.backlog.slice(this.backlogHead));
    this.backlogHead = 0;
  }

  /** Queues a row that was just allocated or whose vector changed. */
  enqueue(row: number): void {
    this.unrecover(row); // a new point or a new vector: a backlog like any other
    if (this.store.state[row] !== PENDING) this.store.setState(row, PENDING);
    this.backlog.push(row);
    this.pendingCount++;
  }

  /**
   * Hides a row's graph node (its vector changed or the point went). The indexer hears of every such
   * row, in the graph or still pending: a graph being built elsewhere may hold its old vector.
   */
  private removeFromGraph(row: number): void {
    if (this.graph.contains(row)) this.graph.remove(row);
    this.indexer.touched(row);
  }
}
