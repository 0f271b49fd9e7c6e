/**
 * Waiting for an operation: `GET /operations/{id}` every poll interval until it SUCCEEDED or FAILED,
 * reporting each answer. The user's interrupt ends the wait only (the operation runs on in the admin
 * service). A short outage of the admin API (it restarts; operations survive that by design) is
 * ridden out for a grace period instead of abandoning the wait.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { type AdminClient, AdminUnreachableError } from './admin-client.js';
import { isTerminal, type OperationView, readOperation } from './operation-view.js';

export const DEFAULT_POLL_INTERVAL_MS = 500;
const DEFAULT_UNREACHABLE_GRACE_MS = 15_000;

export interface WatchOptions {
  pollIntervalMs?: number;
  /** Aborted by the user's interrupt (Ctrl-C). */
  signal: AbortSignal;
  onUpdate(operation: OperationView): void;
  /** How long the API may be unreachable in a row before the wait gives up. */
  unreachableGraceMs?: number;
  now?: () => number;
}

export type WatchOutcome =
  | { kind: 'finished'; operation: OperationView; body: unknown }
  | { kind: 'interrupted'; operation: OperationView | undefined };

export async function watchOperation(
  client: AdminClient,
  operationId: string,
  options: WatchOptions,
): Promise<WatchOutcome> {
  const interval = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const grace = options.unreachableGraceMs ?? DEFAULT_UNREACHABLE_GRACE_MS;
  const now = options.now ?? Date.now;
  const path = `/operations/${encodeURIComponent(operationId)}`;
  let last: OperationView | undefined;
  let unreachableSince: number | undefined;
  for (;;) {
    if (options.signal.aborted) return { kind: 'interrupted', operation: last };
    let body: unknown;
    try {
      body = await client.get(path, { signal: options.signal });
      unreachableSince = undefined;
    } catch (err) {
      if (options.signal.aborted) return { kind: 'interrupted', operation: last };
      if (!(err instanceof AdminUnreachableError)) throw err;
      unreachableSince ??= now();
      if (now() - unreachableSince >= grace) throw err;
    }
    if (body !== undefined) {
      const operation = readOperation(body);
      if (operation === undefined) {
        throw new Error(
          `the admin API answered GET ${path} without an operation_id: ${JSON.stringify(body)}`,
        );
      }
      last = operation;
      options.onUpdate(operation);
      if (isTerminal(operation)) return { kind: 'finished', operation, body };
    }
    try {
      await delay(interval, undefined, { signal: options.signal });
    } catch {
      return { kind: 'interrupted', operation: last };
    }
  }
}
