/**
 * Waits `ms`, or less when `signal` aborts: resolves either way, and the caller checks the signal
 * next. The backoff sleep of the orchestrator's call retries and of the vss consumer runner's batch
 * retries, which must end at once when the request is cancelled or the runner closes.
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
