import type { Platform } from '../platform/platform.js';
import { openProductionVectorDb } from '../vss/index.js';

/**
 * Opens every port's adapter; rejects with the first that cannot be opened, naming it. The vector
 * database goes first: when another process owns the embedded one, its lock names the way out.
 */
export async function openAllPorts(platform: Platform): Promise<void> {
  await platform.vectorDb();
  await openProductionVectorDb(platform);
  await Promise.all([
    platform.configStore(),
    platform.queue(),
    platform.sqlClient(),
    platform.cache(),
    platform.vectorDb(),
  ]);
}
