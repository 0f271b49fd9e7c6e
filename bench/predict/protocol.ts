/** What index.ts and the orchestrator process of the predict benchmark (service.ts) say over IPC. */
import { CATALOG_RANKER_ID } from '../../examples/catalog-ranker.js';
import type { Attribution } from './attribution.js';

export const LOGGED_ID = `${CATALOG_RANKER_ID}_logged`;

export type ServiceCommand =
  | { cmd: 'begin'; countKinds: boolean }
  | { cmd: 'end'; calls: number }
  | { cmd: 'close' };

export type ServiceReply =
  | { type: 'ready'; port: number }
  | (Attribution & {
      type: 'ended';
      executions: number;
      /** The orchestrator process's CPU time (user + system, all threads) over the run, ms. */
      cpuMs: number;
    })
  | {
      type: 'closed';
      dropped: number;
      logMetrics: string[];
      breakdown: Record<string, { ms: number; calls: number }>;
    };
