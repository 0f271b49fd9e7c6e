/**
 * The worker thread of pglite-worker-database.ts: opens the PGlite database named in `workerData`
 * and runs what the adapter asks, each request answered by id. Requests are taken as they come, as
 * on a PGlite instance in the adapter's own thread: PGlite queues statements behind a running
 * transaction itself. A transaction stays open while the adapter runs its callback, and ends on
 * its `end` request.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import { openPglite, runStatement, runWithSettings } from './pglite-database.js';
import {
  errorData,
  type WorkerMessage,
  type WorkerRequest,
  type WorkerStart,
} from './pglite-worker-protocol.js';

const port = parentPort;
if (!port) throw new Error('pglite-worker runs as a worker thread (pglite-worker-database.ts starts it)');
const post = (message: WorkerMessage) => port.postMessage(message);

/** Thrown inside a transaction's callback to make PGlite roll it back. */
const ROLLBACK = new Error('rolled back by the adapter');

interface OpenTransaction {
  tx: Transaction;
  /** Ends the callback: resolve to commit, reject to roll back. */
  end: (commit: boolean) => void;
  /** Settles once PGlite has committed or rolled back. */
  ended: Promise<void>;
}

const transactions = new Map<number, OpenTransaction>();
const listeners = new Map<number, () => Promise<void>>();

function begin(db: PGlite, id: number): Promise<void> {
  return new Promise<void>((began, failed) => {
    let opened = false;
    const ended = db.transaction(async (tx) => {
      let end!: (commit: boolean) => void;
      const decided = new Promise<boolean>((resolve) => {
        end = resolve;
      });
      opened = true;
      transactions.set(id, { tx, end, ended });
      began();
      if (!(await decided)) throw ROLLBACK;
    });
    ended.then(
      () => transactions.delete(id),
      (err: unknown) => {
        transactions.delete(id);
        if (!opened) failed(err);
      },
    );
  });
}

async function end(id: number, commit: boolean): Promise<void> {
  const open = transactions.get(id);
  if (open === undefined) throw new Error(`transaction ${id} is not open`);
  open.end(commit);
  try {
    await open.ended;
  } catch (err) {
    if (err !== ROLLBACK) throw err;
  }
}

async function handle(db: PGlite, request: WorkerRequest): Promise<unknown> {
  switch (request.op) {
    case 'run': {
      if (request.tx === undefined) return runStatement(db, request.text, request.params);
      const open = transactions.get(request.tx);
      if (open === undefined) throw new Error(`transaction ${request.tx} is not open`);
      return runStatement(open.tx, request.text, request.params);
    }
    case 'runWithSettings':
      return runWithSettings(db, request.assignments, request.text, request.params);
    case 'begin':
      return begin(db, request.tx);
    case 'end':
      return end(request.tx, request.commit);
    case 'listen': {
      const { listener } = request;
      listeners.set(
        listener,
        await db.listen(request.channel, (payload) => post({ type: 'notify', listener, payload })),
      );
      return undefined;
    }
    case 'unlisten': {
      const unlisten = listeners.get(request.listener);
      listeners.delete(request.listener);
      await unlisten?.();
      return undefined;
    }
    case 'close':
      await db.close();
      return undefined;
  }
}

const { dataDir, tuning, initOnly } = workerData as WorkerStart;
openPglite(dataDir, tuning).then(
  async (db) => {
    if (initOnly) {
      await db.close();
      post({ type: 'ready' });
      return;
    }
    port.on('message', (request: WorkerRequest) => {
      handle(db, request).then(
        (value) => post({ type: 'answer', id: request.id, ok: true, value }),
        (err: unknown) => post({ type: 'answer', id: request.id, ok: false, error: errorData(err) }),
      );
    });
    post({ type: 'ready' });
  },
  (err: unknown) => post({ type: 'failed', error: errorData(err) }),
);
