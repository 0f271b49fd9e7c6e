/**
 * The PGlite database on a worker thread of its own (pglite-worker.ts), seen from the adapter's
 * thread as a {@link PgliteDatabase}. PGlite runs every statement synchronously in WASM on the thread
 * that holds it; there it took about half of the event loop while the vss consumers ingested
 * embeddings (bench/RESULTS.md, "vss-ingest"), time the loop now spends parsing, planning and writing
 * the vector DB while the worker writes the rows, on another core.
 *
 * Each call is one message each way (parameters and rows are copied by structured clone). The worker
 * keeps the process alive only while a call waits for its answer, as a database in this thread would
 * not keep it alive either. If the worker dies, every waiting and later call fails UNAVAILABLE.
 *
 * The worker's file sits beside this module with this module's extension: `.ts` when the sources run
 * under tsx (tests, `node --import tsx`, bin/lattice.js, which registers tsx's hooks in the main
 * thread only; they are then registered in the worker too), `.js` once compiled.
 */
import { existsSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LatticeError } from '../../errors.js';
import type { PgliteDatabase, PgliteStatements, PgliteTuning, StatementResult } from './pglite-database.js';
import {
  type ErrorData,
  errorFrom,
  type WorkerMessage,
  type WorkerRequest,
  type WorkerStart,
} from './pglite-worker-protocol.js';

/** A request without its id (distributive, so each operation keeps its own fields). */
type Ask = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

function workerEntry(): { url: URL; eval?: string } {
  const extension = extname(fileURLToPath(import.meta.url));
  const url = new URL(`./pglite-worker${extension}`, import.meta.url);
  if (extension !== '.ts') return { url };
  // TypeScript sources: tsx's hooks may live in the main thread only (bin/lattice.js registers them
  // at run time); registering them again where `--import tsx` already did is harmless.
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(url.href)}); });`;
  return { url, eval: source };
}

export class PgliteWorkerDatabase implements PgliteDatabase {
  readonly #worker: Worker;
  readonly #label: string;
  readonly #waiting = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  readonly #listeners = new Map<number, (payload: string) => void>();
  #nextId = 1;
  #stopped: LatticeError | undefined;

  private constructor(worker: Worker, label: string) {
    this.#worker = worker;
    this.#label = label;
    worker.on('message', (message: WorkerMessage) => this.#received(message));
    worker.on('error', (err) => this.#stop(`failed: ${err.message}`));
    worker.on('exit', (code) => this.#stop(`exited with code ${code}`));
  }

  /** Starts the worker and opens the database there; rejects with PGlite's error when it cannot. */
  static async start(
    dataDir: string | undefined,
    label: string,
    tuning: PgliteTuning = {},
  ): Promise<PgliteWorkerDatabase> {
    // Creating a database (initdb) grows PGlite's WebAssembly memory to about 750 MB, which never
    // shrinks: a fresh directory is created by a worker of its own, whose memory goes with it, and
    // then opened here (about 270 MB). A first `lattice up` peaked near 1 GB resident without it.
    if (dataDir !== undefined && !existsSync(join(dataDir, 'PG_VERSION'))) {
      const initialising = await PgliteWorkerDatabase.#spawn({ dataDir, tuning, initOnly: true });
      await initialising.terminate();
    }
    const worker = await PgliteWorkerDatabase.#spawn({ dataDir, tuning });
    worker.unref();
    return new PgliteWorkerDatabase(worker, label);
  }

  /** A worker that has opened the database (or, `initOnly`, created and closed it). */
  static #spawn(start: WorkerStart): Promise<Worker> {
    const entry = workerEntry();
    const worker = entry.eval
      ? new Worker(entry.eval, { eval: true, workerData: start })
      : new Worker(entry.url, { workerData: start });
    return new Promise((resolve, reject) => {
      const opening = (message: WorkerMessage) => {
        if (message.type === 'ready') {
          settle();
          resolve(worker);
        } else if (message.type === 'failed') {
          settle();
          void worker.terminate();
          reject(errorFrom(message.error));
        }
      };
      const died = (err: Error) => {
        settle();
        reject(err);
      };
      const exited = (code: number) => died(new Error(`the PGlite worker exited with code ${code}`));
      const settle = () => {
        worker.off('message', opening);
        worker.off('error', died);
        worker.off('exit', exited);
      };
      worker.on('message', opening);
      worker.on('error', died);
      worker.on('exit', exited);
    });
  }

  run<Row>(text: string, params: readonly unknown[] | undefined): Promise<StatementResult<Row>> {
    return this.#ask({ op: 'run', text, params, tx: undefined }) as Promise<StatementResult<Row>>;
  }

  runWithSettings<Row>(
    assignments: readonly [string, string][],
    text: string,
    params: readonly unknown[] | undefined,
  ): Promise<StatementResult<Row>> {
    return this.#ask({ op: 'runWithSettings', assignments, text, params }) as Promise<StatementResult<Row>>;
  }

  async transaction<T>(fn: (tx: PgliteStatements) => Promise<T>): Promise<T> {
    const tx = this.#nextId++;
    await this.#ask({ op: 'begin', tx });
    let result: T;
    try {
      result = await fn({
        run: <Row>(text: string, params: readonly unknown[] | undefined) =>
          this.#ask({ op: 'run', text, params, tx }) as Promise<StatementResult<Row>>,
      });
    } catch (err) {
      await this.#ask({ op: 'end', tx, commit: false }).catch(() => {});
      throw err;
    }
    await this.#ask({ op: 'end', tx, commit: true });
    return result;
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const listener = this.#nextId++;
    this.#listeners.set(listener, onNotify);
    try {
      await this.#ask({ op: 'listen', listener, channel });
    } catch (err) {
      this.#listeners.delete(listener);
      throw err;
    }
    return async () => {
      this.#listeners.delete(listener);
      await this.#ask({ op: 'unlisten', listener });
    };
  }

  async close(): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.#ask({ op: 'close' });
    } finally {
      this.#stopped ??= new LatticeError('UNAVAILABLE', `${this.#label} is closed`);
      await this.#worker.terminate();
    }
  }

  #ask(request: Ask): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      // Only a call waiting for its answer keeps the process alive.
      if (this.#waiting.size === 0) this.#worker.ref();
      this.#waiting.set(id, { resolve, reject });
      this.#worker.postMessage({ ...request, id } as WorkerRequest);
    });
  }

  #received(message: WorkerMessage): void {
    if (message.type === 'notify') {
      this.#listeners.get(message.listener)?.(message.payload);
      return;
    }
    if (message.type !== 'answer') return;
    const waiting = this.#waiting.get(message.id);
    if (waiting === undefined) return;
    this.#waiting.delete(message.id);
    if (this.#waiting.size === 0) this.#worker.unref();
    if (message.ok) waiting.resolve(message.value);
    else waiting.reject(errorFrom(message.error as ErrorData));
  }

  /** The worker is gone: what waits, and whatever comes later, fails. */
  #stop(why: string): void {
    this.#stopped ??= new LatticeError('UNAVAILABLE', `${this.#label}: its worker thread ${why}`);
    for (const waiting of this.#waiting.values()) waiting.reject(this.#stopped);
    this.#waiting.clear();
    this.#listeners.clear();
  }
}
