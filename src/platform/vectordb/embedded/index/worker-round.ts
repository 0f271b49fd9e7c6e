/**
 * One build of a collection's backlog on the worker thread (graph-builder.ts), from the event loop's
 * side:
 *
 * 1. start: the backlog's rows (in the order the in-process indexer would insert them) and their
 *    vectors, copied into one transferable Float32Array, go to the worker with the graph's
 *    parameters, plus the serving graph: as the rows that changed in it since the worker built it
 *    (the worker kept that graph), else written to a file when it has nodes. The rows stay pending
 *    meanwhile, so searches scan them exactly as they scan any backlog, and `indexedOnly` searches
 *    leave them out; the serving graph keeps answering for the indexed rows.
 * 2. the worker inserts them with the same parameters and seed and writes the graph to a file, which
 *    is read on libuv's thread pool (HnswGraph.loadAsync), not on the loop.
 * 3. swap, in one synchronous step: rows whose graph membership or vector changed since the start
 *    (the collection reports them through Indexer.touched: upserts with a new vector, deletes) are
 *    replayed onto the new graph like compaction's dirty rows, changed rows of the batch go back to
 *    the backlog, the others become indexed, and the new graph replaces the serving one.
 *
 * Nothing here is durable: the write-ahead log and snapshots see rows pending until the swap, so a
 * snapshot taken during a build saves them pending and a crash re-indexes them after a reload. The
 * files are scratch: removed after the round, and a crash's leftovers with the data directory's
 * scratch folder when the database opens.
 */
import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bitset } from '../storage/bitset.js';
import { INDEXED, PENDING } from '../storage/point-store.js';
import { BuildCancelled, type BuildHandle, graphBuilder } from './graph-builder.js';
import { HnswGraph } from './hnsw-graph.js';
import type { IndexTarget } from './index-target.js';
import type { IndexingOptions } from './indexing-options.js';

let nextRound = 0;

/** The graph the worker kept from a round of this collection, and the rows changed since its swap. */
export interface WorkerCopy {
  key: string;
  since: Set<number>;
}

/** Milliseconds the event loop spent on each synchronous part of a round (for measurements). */
export interface RoundTimings {
  rows: number;
  /** Copying the batch's vectors. */
  gatherMs: number;
  /** Writing the serving graph for the worker, or collecting its changes (0 when it was empty). */
  saveMs: number;
  /** Rows of the serving graph sent as changes to the worker's copy; -1 when sent as a file. */
  synced: number;
  /** The worker's build, off the loop. */
  buildMs: number;
  /** Most threads it ran on at once (more than 1: the native parallel builder). */
  threads: number;
  /** Replaying changed rows and swapping. */
  swapMs: number;
}

export class WorkerRound {
  /** Rows whose graph membership or vector changed since the start. */
  readonly dirty = new Set<number>();
  /** true once swapped in, false when cancelled; rejects when the build failed (rows requeued). */
  readonly swapped: Promise<boolean>;
  readonly timings: RoundTimings;
  private cancelled = false;
  /** The worker kept the built graph (not after a parallel build): only then is a copy worth tracking. */
  private kept = false;

  private constructor(
    /** The key the worker keeps the built graph under. */
    readonly key: string,
    private readonly collection: IndexTarget,
    private readonly rows: Uint32Array,
    private readonly files: { base: string | undefined; out: string },
    private readonly handle: BuildHandle,
    timings: RoundTimings,
  ) {
    this.timings = timings;
    this.swapped = this.finish();
  }

  /** Starts a build of `collection`'s backlog; undefined when the worker is busy (another build). */
  static start(
    collection: IndexTarget,
    options: Pick<IndexingOptions, 'scratchDir' | 'parallel'>,
    copy: WorkerCopy | undefined,
  ): WorkerRound | undefined {
    const { scratchDir, parallel } = options;
    if (graphBuilder.busy) return undefined;
    const began = performance.now();
    const { spec, store, graph } = collection;
    const { dimension } = spec;
    const rows = collection.takeBacklog();
    const vectors = new Float32Array(rows.length * dimension);
    for (let i = 0; i < rows.length; i++) vectors.set(store.vector(rows[i]!), i * dimension);
    const gathered = performance.now();

    const dir = scratchDir ?? tmpdir();
    mkdirSync(dir, { recursive: true });
    const key = `${process.pid}-${nextRound++}`;
    const prefix = join(dir, `${scratchDir ? '' : 'lattice-'}graph-${key}`);
    const sync = copy && graphBuilder.holds(copy.key) ? changes(collection, copy) : undefined;
    const synced = sync ? sync.rows.length : -1; // read before the build transfers the arrays
    const files = {
      base: !sync && graph.size + graph.deletedCount > 0 ? `${prefix}-base.hnsw` : undefined,
      out: `${prefix}-built.hnsw`,
    };
    let handle: BuildHandle;
    try {
      if (files.base) graph.save(files.base);
      handle = graphBuilder.build({
        key,
        sync,
        distance: spec.distance,
        dimension,
        params: spec.hnsw,
        baseFile: files.base,
        present: graph.present.words.slice(),
        deleted: graph.deleted.words.slice(),
        rows: rows.slice(),
        vectors,
        outFile: files.out,
        parallel,
      });
    } catch (err) {
      collection.requeue(rows);
      if (files.base) void rm(files.base, { force: true });
      throw err;
    }
    return new WorkerRound(key, collection, rows, files, handle, {
      rows: rows.length,
      gatherMs: gathered - began,
      saveMs: performance.now() - gathered,
      synced,
      buildMs: 0,
      threads: 0,
      swapMs: 0,
    });
  }

  /**
   * Gives the build up: its rows go back to the head of the backlog at once; resolves once the
   * worker has stopped and the files are gone.
   */
  async cancel(): Promise<void> {
    if (this.cancelled) return;
    this.cancelled = true;
    this.collection.requeue(this.rows);
    await this.handle.cancel();
    await this.removeFiles();
  }

  private async finish(): Promise<boolean> {
    const { collection, files } = this;
    const { spec } = collection;
    try {
      const built = await this.handle.done;
      this.timings.buildMs = built.buildMs;
      this.timings.threads = built.threads;
      this.kept = built.kept;
      if (this.cancelled) return false;
      const graph = await HnswGraph.loadAsync(
        files.out,
        spec.distance,
        spec.dimension,
        spec.hnsw,
        Bitset.of(built.present),
        Bitset.of(built.deleted),
      );
      if (this.cancelled) return false;
      this.swap(graph);
      return true;
    } catch (err) {
      if (this.cancelled || err instanceof BuildCancelled) return false;
      collection.requeue(this.rows);
      throw err;
    } finally {
      // A cancelled round removes its files once the worker has stopped writing them.
      if (!this.cancelled) void this.removeFiles();
    }
  }

  private swap(graph: HnswGraph): void {
    const began = performance.now();
    const { collection, rows, dirty } = this;
    const { store } = collection;
    for (const row of dirty) {
      if (store.state[row] === INDEXED) graph.insert(row, store.vector(row));
      else graph.remove(row);
    }
    const changed: number[] = [];
    for (const row of rows) {
      if (store.state[row] !== PENDING) continue; // deleted meanwhile (a dirty row, removed above)
      if (dirty.has(row))
        changed.push(row); // new vector or new point: the in-process indexer's turn
      else collection.markIndexed(row);
    }
    collection.graph = graph;
    collection.requeue(changed);
    this.timings.swapMs = performance.now() - began;
  }

  /**
   * What the worker's copy lacks right after the swap: the rows replayed onto the loaded graph;
   * undefined when the worker kept no copy (a parallel build), so no changes are tracked for it.
   */
  copyAfterSwap(): WorkerCopy | undefined {
    return this.kept ? { key: this.key, since: new Set(this.dirty) } : undefined;
  }

  private async removeFiles(): Promise<void> {
    const { base, out } = this.files;
    // Scratch: what cannot be removed now goes when the data directory is next opened.
    const remove = (file: string | undefined) =>
      file ? rm(file, { force: true }).catch(() => {}) : undefined;
    await Promise.all([base, out].map(remove));
  }
}

/** The serving graph's state of the rows changed since the worker's copy was swapped in. */
function changes(collection: IndexTarget, copy: WorkerCopy) {
  const { graph, store, spec } = collection;
  const rows = new Uint32Array(copy.since.size);
  const live = new Uint8Array(copy.since.size);
  const vectors = new Float32Array(copy.since.size * spec.dimension);
  let count = 0;
  for (const row of copy.since) {
    if (!graph.present.has(row)) continue; // never entered the serving graph
    rows[count] = row;
    live[count] = graph.contains(row) ? 1 : 0;
    vectors.set(store.vector(row), count * spec.dimension);
    count++;
  }
  return {
    key: copy.key,
    rows: rows.slice(0, count),
    live: live.slice(0, count),
    vectors: vectors.slice(0, count * spec.dimension),
  };
}
