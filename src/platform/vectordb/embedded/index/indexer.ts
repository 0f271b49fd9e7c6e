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
 *
 * A large backlog (`workerRows` or more) is built on a worker thread instead (worker-round.ts), so the
 * build runs on the second core beside the writes rather than taking turns with them. One thread did
 * both before: ingestion and index build added up (bench/RESULTS.md, "vss-onboard"). Once the writes
stop, a large round runs on every core (`parallel`, the native parallel builder).
 */
import { INDEXED } from '../storage/point-store.js';
import { graphBuilder } from './graph-builder.js';
import { HnswGraph } from './hnsw-graph.js';
import type { IndexTarget } from './index-target.js';
import type { IndexingOptions } from './indexing-options.js';
import { type RoundTimings, type WorkerCopy, WorkerRound } from './worker-round.js';

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

/** Indexes one collection (`T`: its type, handed back to {@link IndexingOptions.onBuilt}). */
export class Indexer<T extends IndexTarget = IndexTarget> {
  private scheduled: { immediate: NodeJS.Immediate } | { timer: NodeJS.Timeout } | undefined;
  /** performance.now() of the last write that gave the indexer work. */
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private paused = false;
  private stopped = false;
  private idle: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private rebuild: Rebuild | undefined;
  /** The worker build in progress; the in-process indexer waits for it. */
  private round: WorkerRound | undefined;
  /** Compactions asked for during a worker build: they start once it is swapped in or given up. */
  private afterRound: (() => void)[] = [];
  /** The graph the worker kept from this collection's last round, while it matches the serving one. */
  private workerCopy: WorkerCopy | undefined;
  /** Set when a worker build failed (not cancelled): this collection indexes in-process from then on. */
  private workerFailure: Error | undefined;
  /** Graphs built on the worker and swapped in. */
  workerBuilds = 0;
  /** What the last one cost the event loop (measurements). */
  lastWorkerRound: RoundTimings | undefined;
  /** Set when an insert threw; the collection reports FAILED and indexing stops. */
  failure: Error | undefined;
  private readonly sliceMs: number;
  /** The graph version {@link IndexingOptions.onBuilt} last heard of. */
  private builtGraphVersion: number;

  constructor(
    private readonly collection: T,
    private readonly options: IndexingOptions<T>,
  ) {
    this.sliceMs = options.sliceMs;
    this.builtGraphVersion = collection.graphVersion;
  }

  get busy(): boolean {
    return this.collection.pendingCount > 0 || this.rebuild !== undefined || this.round !== undefined;
  }

  /** A worker build is in progress. */
  get building(): boolean {
    return this.round !== undefined;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  get compacting(): boolean {
    return this.rebuild !== undefined;
  }

  /** Schedules a slice if there is work. */
  kick(): void {
    if (this.scheduled || this.round || this.paused || this.stopped || this.failure) return;
    if (!this.busy) {
      this.settleIdle();
      if (this.builtGraphVersion !== this.collection.graphVersion) {
        this.builtGraphVersion = this.collection.graphVersion;
        this.options.onBuilt?.(this.collection);
      }
      return;
    }
    this.scheduled = { immediate: setImmediate(() => this.run()) };
  }

  /** A write added work: the indexer gives way to writes while they keep coming. */
  written(): void {
    this.lastWriteAt = performance.now();
    graphBuilder.noteWrite();
    this.kick();
  }

  /** After a slice: the next one at once, or after the writers' share while writes keep arriving. */
  private next(sliceEnd: number): void {
    if (sliceEnd - this.lastWriteAt > WRITES_RECENT_MS) {
      this.kick();
      return;
    }
    if (this.scheduled || this.round || this.paused || this.stopped || this.failure) return;
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
   * abandoned (its waiters resolve, the current graph stays), so nothing waits on a paused indexer;
   * so is a worker build (the worker is ended, its rows go back to the head of the backlog).
   */
  pause(): void {
    this.paused = true;
    this.unschedule();
    const rebuild = this.rebuild;
    this.rebuild = undefined;
    for (const done of rebuild?.done ?? []) done();
    this.endRound(this.round?.cancel());
  }

  /** Resolves once a cancelled worker build has stopped and its files are gone (close, drop). */
  settled(): Promise<void> {
    return this.cancelling ?? Promise.resolve();
  }

  private cancelling: Promise<void> | undefined;

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
    if (this.round) {
      // Rows the worker build indexes enter the graph at its swap: rebuild after it.
      return new Promise((resolve) => this.afterRound.push(() => void this.compact().then(resolve)));
    }
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
    this.round?.dirty.add(row);
    this.workerCopy?.since.add(row);
  }

  private run(): void {
    this.scheduled = undefined;
    if (this.startRound()) return;
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
    this.workerCopy = undefined; // a graph the worker never saw
    this.rebuild = undefined;
    for (const done of rebuild.done) done();
    return false;
  }

  /** Hands the backlog to the worker when it is large and the worker free; true when it did. */
  private startRound(): boolean {
    const { collection, options } = this;
    if (this.rebuild || this.workerFailure || collection.pendingCount < options.workerRows) return false;
    let round: WorkerRound | undefined;
    try {
      round = WorkerRound.start(collection, options, this.workerCopy);
    } catch (err) {
      this.workerFailed(err);
      return false;
    }
    if (!round) return false;
    this.round = round;
    round.swapped.then(
      (swapped) => {
        if (this.round !== round) return;
        if (swapped) {
          this.workerBuilds++;
          this.lastWorkerRound = round.timings;
          this.workerCopy = round.copyAfterSwap();
        }
        this.endRound();
      },
      (err: unknown) => {
        if (this.round !== round) return;
        this.workerFailed(err);
        this.endRound();
      },
    );
    return true;
  }

  /** The graph is derived: a failed worker build falls back to in-process indexing, said once. */
  private workerFailed(err: unknown): void {
    this.workerFailure = err instanceof Error ? err : new Error(String(err));
    process.emitWarning(
      `vector collection "${this.collection.name}": building its graph on a worker thread failed, indexing in-process: ${this.workerFailure.message}`,
    );
  }

  /** After a worker build (swapped in, failed or cancelled): what waited for it goes on. */
  private endRound(cancelled?: Promise<void>): void {
    if (!this.round) return;
    this.round = undefined;
    if (cancelled) this.cancelling = cancelled;
    for (const next of this.afterRound.splice(0)) next();
    this.kick();
  }

  private settleIdle(): void {
    for (const waiter of this.idle.splice(0)) waiter.resolve();
  }
}
