/**
 * How a command run beside the platform reaches its queue: JetStream (or an embedded queue no
 * process holds) is opened directly; an embedded queue held by a running `lattice up` or `lattice
 * vss` (its journal is locked by that process) is reached through that process's ops server, whose
 * queue routes do the same work there (queue-read-route.ts, queue-publish-route.ts,
 * queue-dead-letters-route.ts).
 */
import { DirectoryInUseError } from '../platform/dir-lock.js';
import { describeError, LatticeError } from '../platform/errors.js';
import type { Platform } from '../platform/platform.js';
import type { Queue } from '../platform/queue/index.js';

export type QueueAccess = { kind: 'direct'; queue: Queue } | { kind: 'ops'; base: string };

/** The embedded queue journal is locked by a live process (`lattice up`, `lattice vss`). */
export function heldByAnotherProcess(err: unknown): boolean {
  return err instanceof DirectoryInUseError;
}

/** The queue itself, or the ops server at `opsBase` of the process that holds it. */
export async function accessQueue(platform: Platform, opsBase: string): Promise<QueueAccess> {
  try {
    return { kind: 'direct', queue: await platform.queue() };
  } catch (err) {
    if (!heldByAnotherProcess(err)) throw err;
    return { kind: 'ops', base: opsBase };
  }
}

export interface OpsAnswer<T> {
  status: number;
  body: T & { error?: { code: string; message: string } };
}

/** One call to the running process's ops server; UNAVAILABLE, saying what to do, when it does not answer. */
export async function callOps<T>(base: string, path: string, init: RequestInit): Promise<OpsAnswer<T>> {
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, init);
  } catch (err) {
    throw new LatticeError(
      'UNAVAILABLE',
      `the queue journal is in use by a running lattice up or lattice vss, whose ops server at ${base} did not answer (${describeError(err)}); point metrics.port (LATTICE_METRICS_PORT) or --address at it`,
    );
  }
  const text = await response.text();
  let body: OpsAnswer<T>['body'];
  try {
    body = JSON.parse(text) as OpsAnswer<T>['body'];
  } catch {
    throw new LatticeError(
      'UNAVAILABLE',
      `the ops server at ${base} answered ${response.status} with something other than JSON (is it a Lattice process of this version?): ${text.slice(0, 200)}`,
    );
  }
  return { status: response.status, body };
}
