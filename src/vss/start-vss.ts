/**
 * vss in a process: the components `lattice vss` (all three), `lattice vss serving | consumers |
 * admin` (one) and `lattice up` start, on one platform, so they share its SQL client, vector
 * databases and queue (the embedded vector database lives in one process: serving and consumers
 * beside it must be in that process too).
 */
import type { Platform } from '../platform/platform.js';
import type { ListeningPart, RunningPart } from '../platform/running-part.js';
import { startVssAdminPart } from './admin-part.js';
import { startVssConsumersPart } from './consumers-part.js';
import { startVssServingPart } from './serving-part.js';

/** The components to start; each port defaults to its setting (0: a free one). */
export interface VssComponents {
  serving?: { port?: number };
  /** `partitions`: the partitions of each topic this process consumes (default all). */
  consumers?: { partitions?: readonly number[] };
  admin?: { port?: number };
}

export interface RunningVss {
  /** The started components, in start order: serving, consumers, admin. */
  parts: RunningPart[];
  serving?: ListeningPart;
  consumers?: RunningPart;
  admin?: ListeningPart;
  /** Serving answers calls from now on (it answered UNAVAILABLE until the whole process had started). */
  open(): void;
  /**
   * Serving first: no call is answered by a half-stopped process; then admin (no new operation, jobs
   * checkpoint); then the consumers drain. A part that fails to stop does not keep the others from
   * stopping.
   */
  stop(): Promise<void>;
}

export async function startVss(platform: Platform, components: VssComponents): Promise<RunningVss> {
  const running: RunningVss = { parts: [], open: () => running.serving?.open?.(), stop: () => stop() };
  const stop = async () => {
    const order = [running.serving, running.admin, running.consumers];
    running.parts = [];
    running.serving = running.admin = running.consumers = undefined;
    for (const part of order) {
      if (part === undefined) continue;
      await part
        .stop()
        .catch((err: unknown) => platform.logger.error({ err, part: part.name }, 'stopping failed'));
    }
  };
  try {
    if (components.serving) {
      running.serving = await startVssServingPart(platform, components.serving.port);
      running.parts.push(running.serving);
    }
    if (components.consumers) {
      running.consumers = await startVssConsumersPart(platform, components.consumers);
      running.parts.push(running.consumers);
    }
    // Admin after the consumers: the operations it resumes wait on what they apply.
    if (components.admin) {
      running.admin = await startVssAdminPart(platform, components.admin.port);
      running.parts.push(running.admin);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return running;
}
