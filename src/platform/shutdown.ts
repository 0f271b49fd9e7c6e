import type { Logger } from './logging/index.js';

/**
 * Runs `stop` once on SIGINT or SIGTERM, then exits. A second signal while stopping exits at once,
 * for an operator who does not want to wait for the drain.
 */
export function onShutdownSignal(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without waiting for the drain');
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down: draining in-flight work');
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', handle);
  process.once('SIGTERM', handle);
}
