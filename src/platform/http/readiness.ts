/**
 * Readiness checks and their bound, apart from the HTTP server that serves them on /readyz: the
 * platform's composition root runs them too (`lattice check`), without loading the server.
 */
import { LatticeError } from '../errors.js';

/** A readiness check: resolves when the dependency answers, throws with the reason otherwise. */
export type ReadinessCheck = () => Promise<void>;

/**
 * Runs one readiness check with a bound: rejects with UNAVAILABLE "`name`: readiness check timed out
 * after N ms" when it has not answered by then. The check itself may still be running; only the
 * answer stops waiting for it.
 */
export async function readinessWithin(name: string, timeoutMs: number, check: ReadinessCheck): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new LatticeError('UNAVAILABLE', `${name}: readiness check timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([check(), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
