/**
 * The reference feature store as a part of `lattice up`, on the platform's SQL database (loaded
 * entities and rows survive a restart). It runs without caller tokens: an internal peer of the
 * orchestrator.
 */
import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import { seedDemoData } from './demo-data.js';
import { startFeatureStore } from './featurestore-server.js';
import { MirroredFeatureStore } from './mirrored-feature-store.js';
import { FeatureRegistry } from './registry.js';
import { ServedRegistry } from './served-registry.js';
import { SqlFeatureStore } from './sql-feature-store.js';

/**
 * The reference feature store: the registry file's entities or the generated demo data (made again
 * at each start, in memory), plus what was loaded into it through FeatureWriterService (entity
 * definitions and rows, kept in the platform's SQL database so a restart serves them again).
 */
export async function startFeatureStorePart(
  platform: Platform,
  port = platform.settings.featurestore.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const durable = await SqlFeatureStore.open(await platform.sqlClient());
  let base: FeatureRegistry | undefined = settings.featurestore.registry
    ? FeatureRegistry.fromFile(settings.featurestore.registry)
    : undefined;
  const { store, rows } = await MirroredFeatureStore.open(durable, {
    seed: async (memory) => {
      base ??= (await seedDemoData(memory)).registry;
    },
  });
  let registry = base!;
  for (const definition of await durable.registeredEntities()) {
    registry = registry.withEntities({ entities: [definition] }, 'a registered entity').registry;
  }
  const served = new ServedRegistry(registry, (name, definition) => durable.saveEntity(name, definition));
  const running = await startFeatureStore({
    registry: served,
    store,
    host: settings.host,
    port,
    logger,
    metrics,
    closeStore: true,
  });
  const loaded = rows > 0 ? `, ${rows} loaded rows` : '';
  return {
    name: 'featurestore',
    port: running.port,
    local: running.local,
    endpoints: [
      [
        `gRPC retrieve.FeatureService + featurestore.v1.FeatureWriterService (${settings.featurestore.registry ? 'registry file' : 'seeded demo data'}${loaded})`,
        `${settings.host}:${running.port}`,
      ],
    ],
    stop: () => running.stop(),
  };
}
