/** `lattice featurestore serve | load`: the reference feature store and its bulk loader. */
import {
  demoRegistry,
  describeBadRow,
  FeatureRegistry,
  type FeatureStore,
  loadFeatureFiles,
  openFeatureStore,
  RemoteFeatureStore,
  seedDemoData,
  startFeatureStorePart,
} from '../../featurestore/index.js';
import { serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { Platform } from '../../platform/platform.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import { type Invocation, UsageError } from '../command-kit.js';
import { checkExposure } from '../exposure.js';
import type { FeatureStoreLoadOptions, FeatureStoreServeOptions } from './featurestore.command.js';

type StoreKind = 'memory' | 'redis';

function openStore(kind: StoreKind, settings: LoadedSettings): Promise<FeatureStore> {
  return kind === 'memory'
    ? openFeatureStore({ kind: 'memory' })
    : openFeatureStore({
        kind: 'redis',
        url: settings.cache.url,
        keyPrefix: `${settings.cache.keyPrefix}fs:`,
        connectTimeoutMs: settings.cache.connectTimeoutMs,
      });
}

/** `lattice featurestore serve`. */
export async function runFeatureStoreServe({
  options: values,
  context,
}: Invocation<FeatureStoreServeOptions>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  checkExposure(settings, [{ name: 'feature store gRPC', auth: 'callerTokens' }]);
  serveTlsByDefault(tlsOf(settings).server);
  const logger = createLogger('featurestore', { level: settings.logLevel });
  const kind: StoreKind = values.store ?? settings.cache.kind;
  const port = values.port ?? settings.featurestore.port;
  const registryFile = values.registry ?? settings.featurestore.registry;
  const registry: FeatureRegistry = registryFile ? FeatureRegistry.fromFile(registryFile) : demoRegistry();
  const loads = (values.load ?? []).map((spec) => {
    const at = spec.indexOf('=');
    if (at <= 0 || at === spec.length - 1) {
      throw new UsageError(`--load takes ENTITY=FILE, got ${JSON.stringify(spec)}`);
    }
    return { entity: registry.requireEntity(spec.slice(0, at), '--load').name, file: spec.slice(at + 1) };
  });

  const store = await openStore(kind, settings);
  try {
    if (values.demo || (!registryFile && kind === 'memory')) {
      const data = await seedDemoData(store);
      const counts = Object.entries(data.rows).map(([entity, rows]) => `${rows.length} ${entity}`);
      console.log(`Seeded demo rows: ${counts.join(', ')}`);
    }
    for (const { entity, file } of loads) {
      const report = await loadFeatureFiles({ registry, store, entity, files: [file], progress: false });
      console.log(
        `Loaded ${report.rowsWritten} ${entity} rows from ${file} (${report.badRows} bad rows skipped)`,
      );
      for (const bad of report.badRowSamples.slice(0, 20)) console.error(`  ${describeBadRow(bad)}`);
    }
  } catch (err) {
    await store.close();
    throw err;
  }

  const platform = new Platform(settings, { logger, metrics: new Metrics() });
  const running = await startFeatureStorePart(platform, port, {
    served: { store, registry },
    fillDefaults: values.fillDefaults === true,
    ownProcess: true,
  });
  onShutdownSignal(logger, async () => {
    await running.stop();
    await platform.close();
  });
  const entities = registry.entities.map((entity) => entity.name).join(', ');
  console.log(
    `Feature store listening on ${running.address} (${kind} store; entities: ${entities}${values.fillDefaults ? '; unknown keys get defaults' : ''})`,
  );
  console.log('Ctrl-C stops it, draining in-flight calls.');
}

/** `lattice featurestore load`. */
export async function runFeatureStoreLoad({
  options: values,
  args,
  context,
}: Invocation<FeatureStoreLoadOptions>): Promise<void> {
  const files = args[0] as string[];
  const settings = loadSettings({ file: context.settingsFile });
  const registry = FeatureRegistry.fromFile(values.registry);
  registry.requireEntity(values.entity, '--entity');
  const kind = values.store ?? (settings.cache.kind === 'redis' ? 'redis' : 'server');
  const ttlSeconds = values.ttlSeconds;
  const quiet = values.quiet === true;

  let store: FeatureStore;
  let into: string = `the ${kind} store`;
  if (kind === 'server') {
    const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
    const address = values.address ?? `${host}:${settings.featurestore.port}`;
    const remote = new RemoteFeatureStore({ address, tls: tlsOf(settings).client });
    try {
      const { added } = await remote.registerEntities(registry.toDocument());
      if (added.length > 0 && !quiet)
        console.error(`Registered ${added.join(', ')} with the feature store at ${address}`);
    } catch (err) {
      await remote.close();
      throw err;
    }
    store = remote;
    into = `the feature store at ${address}`;
  } else store = await openStore(kind, settings);
  let printed = 0;
  try {
    const report = await loadFeatureFiles({
      registry,
      store,
      entity: values.entity,
      files,
      format: values.format,
      delimiter: values.delimiter,
      batchSize: values.batchSize || undefined,
      maxBadRows: values.maxBadRows,
      ttlMs: ttlSeconds ? ttlSeconds * 1000 : undefined,
      progress: quiet ? false : {},
      onBadRow: (bad) => {
        if (printed++ < 20) console.error(`bad row: ${describeBadRow(bad)}`);
        else if (printed === 21) console.error('bad row: … (more are counted, not shown)');
      },
    });
    const seconds = (report.elapsedMs / 1000).toFixed(1);
    console.log(
      `Loaded ${report.rowsWritten} ${report.entity} rows from ${report.files.length} file(s) into ${into} in ${seconds} s; ${report.badRows} bad row(s) skipped`,
    );
  } finally {
    await store.close();
  }
}
