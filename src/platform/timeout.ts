import { LatticeError } from './errors.js';

/**
 * Runs `work` with a deadline: rejects with UNAVAILABLE (connection attempts) or DEADLINE_EXCEEDED
 * once `ms` pass, so that nothing waiting on a server can hang. `what` names the operation in the error.
 */
export async function withTimeout<T>(
  what: string,
  ms: number,
  work: Promise<T> | (() => Promise<T>),
  code: 'UNAVAILABLE' | 'DEADLINE_EXCEEDED' = 'DEADLINE_EXCEEDED',
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LatticeError(code, `${what}: no answer within ${ms} ms`)), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([typeof work === 'function' ? work() : work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
