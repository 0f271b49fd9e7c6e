/**
 * Background work of one collection on the event loop, in time slices of `sliceMs` separated by
 * `setImmediate`, so I/O and searches interleave with a long build: inserting the backlog into the
 * graph, and compaction (rebuilding the graph without the nodes of deleted points).
 *
 * While writes keep arriving (an ingestion), the indexer yields most of the loop to them: after a
 * slice it waits `WRITER_SHARE` slices' time before the next, instead of the next turn. The work is
 * the same either way (one thread does both), but writes are acknowledged sooner and the backlog is
 * indexed at full speed once they stop. On the 2-core VM, indexing took ~40 % of the loop while
 * 100,000 events were ingested (bench/vss-ingest), slowing acknowledgements as much.
 *
 * Compaction builds a second graph from the indexed rows while the first keeps serving. Rows whose
 * graph membership changes meanwhile are noted as dirty and replayed onto the new graph before the
 * swap, so the swap loses nothing. Row numbers (graph labels) do not change.
 */
import type { Collection } from './collection.js';
import { HnswGraph } from './hnsw-graph.js';
import { INDEXED } from './point-store.js';

/** Slices of writer time per indexer slice while writes arrive. */
const WRITER_SHARE = 3;
/** Writes within this long of a slice's end count as "writes keep arriving", ms. */
const WRITES_RECENT_MS = 50;

interface Rebuild {
  graph: HnswGraph;
  queue: Uint32Array;
  at: number;
  dirty: Set<number>;
  done: (() => void)[];
}

export class Indexer {
  private scheduled: { immediate: NodeJS.Immediate } | { timer: NodeJS.Timeout } | undefined;
  /** performance.now() of the last write that gave the indexer work. */
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private paused = false;
  private stopped = false;
  private idle: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private rebuild: Rebuild | undefined;
  /** Set when an insert threw; the collection reports FAILED and indexing stops. */
  failure: Error | undefined;

  constructor(
    private readonly collection: Collection,
    private readonly sliceMs: number,
  ) {}

  get busy(): boolean {
    return this.collection.pendingCount > 0 || this.rebuild !== undefined;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  get compacting(): boolean {
    return this.rebuild !== undefined;
  }

  /** Schedules a slice if there is work. */
  kick(): void {
    if (this.scheduled || this.paused || this.stopped || this.failure) return;
    if (!this.busy) {
      this.settleIdle();
      return;
    }
    this.scheduled = { immediate: setImmediate(() => this.run()) };
  }

  /** A write added work: the indexer gives way to writes while they keep coming. */
  written(): void {
    this.lastWriteAt = performance.now();
    this.kick();
  }

  /** After a slice: the next one at once, or after the writers' share while writes keep arriving. */
  private next(sliceEnd: number): void {
    if (sliceEnd - this.lastWriteAt > WRITES_RECENT_MS) {
      this.kick();
      return;
    }
    if (this.scheduled || this.paused || this.stopped || this.failure) return;
    this.scheduled = { timer: setTimeout(() => this.run(), this.sliceMs * WRITER_SHARE) };
  }

  private unschedule(): void {
    const scheduled = this.scheduled;
    if (scheduled === undefined) return;
    if ('immediate' in scheduled) clearImmediate(scheduled.immediate);
    else clearTimeout(scheduled.timer);
    this.scheduled = undefined;
  }

  /**
   * Holds the backlog (tests, bulk loads); searches keep working. A compaction in progress is
   * abandoned (its waiters resolve, the current graph stays), so nothing waits on a paused indexer.
   */
  pause(): void {
    this.paused = true;
    this.unschedule();
    const rebuild = this.rebuild;
    this.rebuild = undefined;
    for (const done of rebuild?.done ?? []) done();
  }

  resume(): void {
    this.paused = false;
    this.kick();
  }

  stop(): void {
    this.pause();
    this.stopped = true;
    for (const waiter of this.idle.splice(0))
      waiter.reject(new Error(`collection "${this.collection.name}" closed`));
  }

  /** Resolves once the backlog is empty and no compaction runs. */
  whenIdle(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.idle.push({ resolve, reject });
      this.kick();
    });
  }

  /** Rebuilds the graph without deleted nodes; resolves after the swap (at once when paused). */
  compact(): Promise<void> {
    const { collection } = this;
    if (this.paused || this.stopped) return Promise.resolve();
    if (!this.rebuild) {
      const { spec, store } = collection;
      this.rebuild = {
        graph: new HnswGraph(spec.distance, spec.dimension, spec.hnsw, Math.max(1024, store.indexedCount)),
        queue: store.indexed.toArray(),
        at: 0,
        dirty: new Set(),
        done: [],
      };
    }
    const rebuild = this.rebuild;
    const swapped = new Promise<void>((resolve) => rebuild.done.push(resolve));
    this.kick();
    return swapped;
  }

  /** Called whenever a row enters or leaves the serving graph. */
  touched(row: number): void {
    this.rebuild?.dirty.add(row);
  }

  private run(): void {
    this.scheduled = undefined;
    const deadline = performance.now() + this.sliceMs;
    try {
      do {
        const row = this.collection.nextPending();
        if (row !== undefined) this.collection.index(row);
        else if (!this.rebuild || !this.rebuildStep()) break;
      } while (performance.now() < deadline);
    } catch (err) {
      this.failure = err instanceof Error ? err : new Error(String(err));
      for (const waiter of this.idle.splice(0)) waiter.reject(this.failure);
      return;
    }
    this.next(performance.now());
  }

  /** Inserts the next row into the new graph, or finishes; false when there is nothing left. */
  private rebuildStep(): boolean {
    const rebuild = this.rebuild!;
    const { store } = this.collection;
    while (rebuild.at < rebuild.queue.length) {
      const row = rebuild.queue[rebuild.at++]!;
      if (store.state[row] === INDEXED && !rebuild.dirty.has(row)) {
        rebuild.graph.insert(row, store.vector(row));
        return true;
      }
    }
    for (const row of rebuild.dirty) {
      if (store.state[row] === INDEXED) rebuild.graph.insert(row, store.vector(row));
      else rebuild.graph.remove(row);
    }
    this.collection.graph = rebuild.graph;
    this.rebuild = undefined;
    for (const done of rebuild.done) done();
    return false;
  }

  private settleIdle(): void {
    for (const waiter of this.idle.splice(0)) waiter.resolve();
  }
}
