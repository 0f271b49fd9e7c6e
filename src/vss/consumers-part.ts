import type { Platform } from '../platform/platform.js';
import type { RunningPart } from '../platform/running-part.js';
import { startVssConsumers } from './consumers/index.js';
import { openVssAdapters, vectorDbTypeOf } from './vss-adapters.js';

/**
 * The vss consumers (consumers/vss-consumers.ts): the vss topics ensured (settings
 * `vss.consumers`), embedding events, EOF markers and real-time events applied to the SQL store and
 * the platform's vector database, and the sweep of expired embedding-store rows. On the embedded
 * vector database this must share its process with vss serving (`lattice vss`): the database lives
 * in one process.
 */
export async function startVssConsumersPart(
  platform: Platform,
  options: { partitions?: readonly number[] } = {},
): Promise<RunningPart> {
  const { settings, logger, metrics } = platform;
  const { sql, vectorDb, vectorDbs } = await openVssAdapters(platform);
  const queue = await platform.queue();
  const consumers = await startVssConsumers({
    sql,
    vectorDb,
    vectorDbs,
    vectorDbType: vectorDbTypeOf(settings.vss.vectorDb.kind),
    queue,
    settings: settings.vss.consumers,
    metrics,
    logger,
    ...(options.partitions === undefined ? {} : { partitions: options.partitions }),
  });
  const own =
    consumers.ownPartitions.length === consumers.partitions
      ? `${consumers.partitions} partitions per topic`
      : `partitions ${consumers.ownPartitions.join(',')} of ${consumers.partitions} per topic`;
  return {
    name: 'vss-consumers',
    endpoints: [
      [
        `vss consumers (group ${consumers.group}, ${own})`,
        `${settings.queue.kind} topics ${consumers.topics.join(', ')}`,
      ],
    ],
    stop: () => consumers.stop(),
  };
}
