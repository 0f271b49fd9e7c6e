/**
 * Messages between the embedded SQL adapter and the worker thread that runs its PGlite database
 * (pglite-worker-database.ts ⇄ pglite-worker.ts). Every request carries an id its answer repeats;
 * notifications of a LISTEN come unasked, naming the listener.
 */
import type { PgliteTuning } from './pglite-database.js';

export interface WorkerStart {
  /** Database directory (absolute); in memory when undefined. */
  dataDir: string | undefined;
  tuning: PgliteTuning;
  /** Only create the database in `dataDir` (initdb), close it and exit; answers `ready` once closed. */
  initOnly?: boolean;
}

export type WorkerRequest = { id: number } & (
  | { op: 'run'; text: string; params: readonly unknown[] | undefined; tx: number | undefined }
  /** One statement with settings SET LOCAL for it, in a transaction of its own (runWithSettings). */
  | {
      op: 'runWithSettings';
      assignments: readonly [string, string][];
      text: string;
      params: readonly unknown[] | undefined;
    }
  /** Opens transaction `tx`; answered once its BEGIN ran. */
  | { op: 'begin'; tx: number }
  /** Ends transaction `tx`: COMMIT, or ROLLBACK; answered once it ended. */
  | { op: 'end'; tx: number; commit: boolean }
  | { op: 'listen'; listener: number; channel: string }
  | { op: 'unlisten'; listener: number }
  | { op: 'close' }
);

/** A PGlite error as data: its message and its own fields (`code`, `detail`, …) that are plain values. */
export interface ErrorData {
  name: string;
  message: string;
  fields: Record<string, string | number | boolean | null>;
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'failed'; error: ErrorData }
  | { type: 'answer'; id: number; ok: true; value: unknown }
  | { type: 'answer'; id: number; ok: false; error: ErrorData }
  | { type: 'notify'; listener: number; payload: string };

export function errorData(err: unknown): ErrorData {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err), fields: {} };
  const fields: ErrorData['fields'] = {};
  for (const [key, value] of Object.entries(err)) {
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) {
      fields[key] = value as string | number | boolean | null;
    }
  }
  return { name: err.name, message: err.message, fields };
}

/** The error again, on the other side: an Error with the same message, name and fields. */
export function errorFrom(data: ErrorData): Error {
  const err = new Error(data.message);
  err.name = data.name;
  Object.assign(err, data.fields);
  return err;
}
