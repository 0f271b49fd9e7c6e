import { describeError } from '../../platform/errors.js';
import { createLogger } from '../../platform/logging/index.js';
import { Platform } from '../../platform/platform.js';
import { loadSettings } from '../../platform/settings/index.js';
import type { Invocation } from '../command-kit.js';
import { describePorts } from './ports.js';

/**
 * Opens each configured port's adapter (the vector database included), runs its readiness check, and prints one line per port.
 * Exit status 1 when any fails: a quick way to verify settings before starting a service.
 */
export async function runCheck({ context }: Invocation<object>): Promise<number> {
  const settings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings, { logger: createLogger('lattice', { level: 'silent' }) });
  const where = describePorts(platform);
  const open: Record<string, () => Promise<unknown>> = {
    configStore: () => platform.configStore(),
    queue: () => platform.queue(),
    sql: () => platform.sqlClient(),
    cache: () => platform.cache(),
    vectorDb: () => platform.vectorDb(),
  };
  let failed = 0;
  for (const [name, openPort] of Object.entries(open)) {
    const started = performance.now();
    try {
      await openPort();
      await platform.readiness()[name]?.();
      console.log(
        `ok      ${name.padEnd(12)} ${where[name]} (${Math.round(performance.now() - started)} ms)`,
      );
    } catch (err) {
      failed++;
      console.log(`FAILED  ${name.padEnd(12)} ${where[name]}: ${describeError(err)}`);
    }
  }
  await platform.close();
  return failed > 0 ? 1 : 0;
}
