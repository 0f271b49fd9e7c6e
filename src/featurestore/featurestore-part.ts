/**
 * The reference feature store as a part of a process. In `lattice up` it serves from the platform's
 * SQL database (loaded entities and rows survive a restart), without caller tokens: an internal peer
 * of the orchestrator. Alone (`lattice featurestore serve`) it serves the memory or Redis store the
 * command opened and filled, guarded by caller tokens.
 */
import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import { grpcServerSettings } from '../platform/settings/index.js';
import { seedDemoData } from './demo-data.js';
import { startFeatureStore } from './featurestore-server.js';
import { MirroredFeatureStore } from './mirrored-feature-store.js';
import { FeatureRegistry } from './registry.js';
import { ServedRegistry } from './served-registry.js';
import { SqlFeatureStore } from './sql-feature-store.js';
import type { FeatureStore } from './store.js';

export interface FeatureStorePart extends ListeningPart {
  /** `host:port` to dial. */
  address: string;
}

export interface FeatureStorePartOptions {
  /**
   * Serve this store and registry instead of the platform's SQL-backed one (`lattice featurestore
   * serve --store memory|redis`); the part closes the store when it stops.
   */
  served?: { store: FeatureStore; registry: FeatureRegistry };
  /** Unknown keys get the registry defaults instead of an empty `columns` list. */
  fillDefaults?: boolean;
  /**
   * Caller tokens (settings `auth`) guard its API and the settings' gRPC limits (`grpc.*`) apply, as
   * for a server that runs as its own process (`lattice featurestore serve`).
   */
  ownProcess?: boolean;
}

/**
 * The reference feature store: by default over the platform's SQL database (`openDurable`), else
 * over the store it is given.
 */
export async function startFeatureStorePart(
  platform: Platform,
  port = platform.settings.featurestore.port,
  options: FeatureStorePartOptions = {},
): Promise<FeatureStorePart> {
  const { settings, logger, metrics } = platform;
  const { registry, store, description } = options.served
    ? { ...options.served, description: 'given store' }
    : await openDurable(platform);
  const running = await startFeatureStore({
    registry,
    store,
    host: settings.host,
    port,
    fillDefaults: options.fillDefaults,
    logger,
    metrics,
    ...(options.ownProcess ? grpcServerSettings(settings) : {}),
    closeStore: true,
  });
  return {
    name: 'featurestore',
    port: running.port,
    address: running.address,
    local: running.local,
    endpoints: [
      [
        `gRPC retrieve.FeatureService + featurestore.v1.FeatureWriterService (${description})`,
        `${settings.host}:${running.port}`,
      ],
    ],
    stop: () => running.stop(),
  };
}

/**
 * The registry file's entities or the generated demo data (made again at each start, in memory), plus
 * what was loaded through FeatureWriterService (entity definitions and rows, kept in the platform's
 * SQL database so a restart serves them again).
 */
async function openDurable(
  platform: Platform,
): Promise<{ registry: ServedRegistry; store: FeatureStore; description: string }> {
  const { settings } = platform;
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
  const loaded = rows > 0 ? `, ${rows} loaded rows` : '';
  return {
    registry: served,
    store,
    description: `${settings.featurestore.registry ? 'registry file' : 'seeded demo data'}${loaded}`,
  };
}
