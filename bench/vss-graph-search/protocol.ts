/** The messages between vss-graph-search's load generator (index.ts) and its serving process (db-process.ts). */

import type { RunStats } from '../support/stats.js';

export const COLLECTION = 'bench';

export interface Params {
  points: number;
  dimension: number;
  clusters: number;
  seed: number;
  cacheDir: string;
}

export type ToServer =
  | { type: 'search'; id: number; vector: Float32Array; k: number }
  | { type: 'cpu'; id: number }
  /** Run `calls` searches of `queries` in the serving process itself, `inFlight` at a time. */
  | { type: 'local'; id: number; queries: Float32Array[]; calls: number; inFlight: number }
  | { type: 'close' };

export type FromServer =
  | { type: 'ready'; loadOrBuild_s: number; poolThreads: number }
  | { type: 'hits'; id: number; ids: string[] }
  | { type: 'error'; id: number; message: string }
  | { type: 'cpu'; id: number; cpuMicros: number; wallMs: number }
  | { type: 'local'; id: number; stats: RunStats; cores: number };
