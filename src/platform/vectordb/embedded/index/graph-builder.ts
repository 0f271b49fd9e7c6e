/**
 * Builds HNSW graphs on a worker thread (graph-build-worker.ts), one build at a time per process:
 * the machine this targets has two cores, so one build beside the event loop uses the second and a
 * second build would only take turns with the first. A large build that finds the process idle uses
 * every core through the native parallel builder instead (BuildRequest.parallel), still as the one
 * build. The worker is started on the first build, kept for the next (its startup, with TypeScript
 * compiled on the fly under tsx, is not repeated every round), unref'd while idle so it never keeps
 * a process alive, and ended after a minute without builds. Cancelling a build raises a shared flag
 * the worker checks between inserts: terminating a worker inside an hnswlib call aborts the whole
 * process (node-addon-api cannot throw into a thread being terminated: "FATAL ERROR:
 * Error::ThrowAsJavaScriptException napi_throw"), so the worker is only ever terminated while idle.
 *
 * The worker's file sits beside this module with this module's extension: `.ts` when the sources run
 * under tsx (tests, `node --import tsx`, bin/lattice.js, which registers tsx's hooks in the main
 * thread only; they are then registered in the worker too), `.js` once compiled.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { DistanceFunction, HnswParams } from '../../vector-db.js';

export interface BuildRequest {
  id: number;
  /** Names the built graph, which the worker keeps for the next round ({@link sync}). */
  key: string;
  distance: DistanceFunction;
  dimension: number;
  params: HnswParams;
  /**
   * Insert into the graph the worker kept from build `sync.key`, first brought to the serving
   * graph's state for `sync.rows` (changed since): live ones (re)inserted with their vector, the
   * others marked deleted. Otherwise into the graph in `baseFile`, or an empty one.
   */
  sync: { key: string; rows: Uint32Array; live: Uint8Array; vectors: Float32Array } | undefined;
  /** The graph to insert into, written by HnswGraph.save; undefined to start from an empty one. */
  baseFile: string | undefined;
  /** Label sets of the base graph (HnswGraph.present / deleted words). */
  present: Uint32Array;
  deleted: Uint32Array;
  /** Rows (labels) to insert, in order, and their vectors (row i at i × dimension). */
  rows: Uint32Array;
  vectors: Float32Array;
  /** Where the worker writes the built graph. */
  outFile: string;
  /** Shared with the worker: set to 1 to cancel; checked between inserts. */
  cancel: Int32Array;
  /**
   * Shared with the worker: `Date.now()` of the process's last write to a collection (index 0,
   * {@link GraphBuildWorker.noteWrite}) and of its last search (index 1, `noteSearch`).
   */
  activity: Float64Array;
  /**
   * Large rounds go to the native parallel builder (parallel-builder.ts): from `minRows` rows, on
   * up to `threads` threads while nothing else wants the cores (no write or search lately), one
   * otherwise. Undefined: always one thread, in the order given.
   */
  parallel: { minRows: number; threads: number } | undefined;
}

export type BuildResponse =
  | {
      id: number;
      ok: true;
      present: Uint32Array;
      deleted: Uint32Array;
      buildMs: number;
      /** Most threads the build ran on at once (1 unless the parallel builder took it). */
      threads: number;
      /** The worker kept the built graph for the next round's `sync` (not after a parallel build). */
      kept: boolean;
    }
  | { id: number; ok: false; cancelled: boolean; message: string };

export type BuiltGraph = Extract<BuildResponse, { ok: true }>;

export interface BuildHandle {
  /** Resolves with the built graph's label sets once its file is written. */
  done: Promise<BuiltGraph>;
  /** Ends the build; resolves once the worker has stopped working on it (no file written after). */
  cancel(): Promise<void>;
}

/** Thrown into `done` when the build was cancelled. */
export class BuildCancelled extends Error {
  constructor() {
    super('graph build cancelled');
  }
}

const IDLE_MS = 60_000;

function workerEntry(): { url: URL; eval?: string } {
  const extension = extname(fileURLToPath(import.meta.url));
  const url = new URL(`./graph-build-worker${extension}`, import.meta.url);
  if (extension !== '.ts') return { url };
  // TypeScript sources: tsx's hooks may live in the main thread only (bin/lattice.js registers them
  // at run time); registering them again where `--import tsx` already did is harmless.
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(url.href)}); });`;
  return { url, eval: source };
}

class GraphBuildWorker {
  private worker: Worker | undefined;
  private running:
    | {
        id: number;
        key: string;
        resolve: (built: BuiltGraph) => void;
        reject: (err: Error) => void;
        stopped: () => void;
      }
    | undefined;
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  /** The key of the graph the worker keeps (its last build), while that worker lives. */
  private kept: string | undefined;

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** The worker holds the graph built under `key`, so a build can {@link BuildRequest.sync} from it. */
  holds(key: string): boolean {
    return this.kept === key;
  }

  /**
   * A collection was written: builds yield to the writers for a while (graph-build-worker.ts). A
   * plain store: the worker only compares it with its clock, so a torn read could only misjudge
   * one pause.
   */
  noteWrite(): void {
    this.activity[0] = Date.now();
  }

  /** A collection was searched: a parallel build drops to one thread for a while, leaving a core to searches. */
  noteSearch(): void {
    this.activity[1] = Date.now();
  }

  readonly activity = new Float64Array(new SharedArrayBuffer(16));

  /** Starts a build; only when not {@link busy}. `vectors`, `rows` and the label sets are transferred. */
  build(request: Omit<BuildRequest, 'id' | 'cancel' | 'activity'>): BuildHandle {
    if (this.running) throw new Error('a graph build is already running');
    const id = this.nextId++;
    const worker = this.ensureWorker();
    worker.ref();
    let stopped!: () => void;
    const whenStopped = new Promise<void>((resolve) => {
      stopped = resolve;
    });
    const done = new Promise<BuiltGraph>((resolve, reject) => {
      this.running = { id, key: request.key, resolve, reject, stopped };
    });
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const message: BuildRequest = { ...request, id, cancel: flag, activity: this.activity };
    this.kept = undefined; // the worker drops it, or builds on it, from now
    const { sync } = message;
    worker.postMessage(message, [
      message.vectors.buffer,
      message.rows.buffer,
      message.present.buffer,
      message.deleted.buffer,
      ...(sync ? [sync.rows.buffer, sync.live.buffer, sync.vectors.buffer] : []),
    ] as ArrayBuffer[]);
    const cancel = async () => {
      if (this.running?.id !== id) return;
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0); // ends a pause the build takes for the writers
      await whenStopped;
    };
    return { done, cancel };
  }

  private ensureWorker(): Worker {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.worker) return this.worker;
    const entry = workerEntry();
    const worker = entry.eval ? new Worker(entry.eval, { eval: true }) : new Worker(entry.url);
    worker.on('message', (response: BuildResponse) => {
      if (response.id !== this.running?.id) return;
      if (response.ok) {
        this.kept = response.kept ? this.running.key : undefined;
        this.settle(undefined, response);
      } else if (response.cancelled) this.settle(new BuildCancelled());
      else this.settle(new Error(`graph build failed in the worker: ${response.message}`));
    });
    worker.on('error', (err) => {
      if (this.worker === worker) {
        this.worker = undefined;
        this.kept = undefined;
      }
      this.settle(err);
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) {
        this.worker = undefined;
        this.kept = undefined;
      }
      this.settle(new Error(`graph build worker exited with code ${code}`));
    });
    this.worker = worker;
    return worker;
  }

  private settle(err: Error | undefined, built?: BuiltGraph): void {
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    if (err) running.reject(err);
    else running.resolve(built!);
    running.stopped();
    const worker = this.worker;
    if (!worker) return;
    worker.unref();
    this.idleTimer = setTimeout(() => void this.terminate(), IDLE_MS);
    this.idleTimer.unref();
  }

  private async terminate(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.kept = undefined;
    if (worker) await worker.terminate();
  }
}

/** The process's graph builder. */
export const graphBuilder = new GraphBuildWorker();
