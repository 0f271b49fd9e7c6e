/**
 * What a service's start function returns (src/orchestrator, src/vss and the reference servers each
 * export one): a part of a process, started on the platform's adapters, saying where it listens. The
 * CLI starts one (`lattice orchestrator`, …) or all of them (`lattice up`) in a process and puts each
 * part's endpoints, readiness and stop into that process's start-up lines, ops server and shutdown.
 */
import type { LocalChannel } from './grpc/index.js';
import type { ReadinessCheck } from './http/index.js';

export interface RunningPart {
  name: string;
  /** What listens (or consumes) where, e.g. `['gRPC retrieve.FeatureService', '127.0.0.1:50052']`. */
  endpoints: [string, string][];
  stop(): Promise<void>;
  /** Readiness checks of its own, beside "accepts connections" (added to the ops server's /readyz). */
  readiness?: Record<string, ReadinessCheck>;
  /**
   * Starts serving calls, for a part that listens from its start but answers UNAVAILABLE until the
   * whole process has started (the composition root calls it once every part is up).
   */
  open?(): void;
}

/** A part that serves on a port. */
export interface ListeningPart extends RunningPart {
  /** The port it bound (the configured one, or a free one when configured as 0). */
  port: number;
  /** Its gRPC methods for the other parts of this process, without the network (none with caller tokens). */
  local?: LocalChannel;
}
