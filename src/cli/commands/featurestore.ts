import { parseArgs } from 'node:util';
import {
  demoRegistry,
  describeBadRow,
  FeatureRegistry,
  type FeatureStore,
  type LoadFormat,
  loadFeatureFiles,
  openFeatureStore,
  seedDemoData,
  startFeatureStore,
} from '../../featurestore/index.js';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { callerAuth, type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { CliContext } from '../main.js';

export const DEFAULT_FEATURESTORE_PORT = 50052;

const usage = `lattice featurestore — the reference online feature store (retrieve.FeatureService)

Usage:
  lattice featurestore serve [--registry FILE] [--store memory|redis] [--port N] [--fill-defaults]
                             [--demo] [--load ENTITY=FILE ...]
  lattice featurestore load --registry FILE --entity E [--store redis|memory] [--format csv|jsonl|parquet]
                            [--batch-size N] [--max-bad-rows N] [--ttl-seconds N] [--delimiter C] [--quiet] FILE...

serve: answers RetrieveFeatures / RetrieveDecodedResult on --port (default ${DEFAULT_FEATURESTORE_PORT}; 0 picks a
  free one) at the settings' host. --store defaults to the settings' cache kind; Redis is the
  settings' cache.url. Without --registry the demo registry is served, seeded with demo rows on the
  memory store (--demo seeds them on any store). --load loads a file into the store before serving.
  Unknown keys answer with an empty columns list, or the registry defaults with --fill-defaults.
  Caller tokens (auth.callerTokens) turn on caller-token auth.
load: bulk-loads CSV (header: key columns, then group:feature or feature), JSON Lines or Parquet
  files into Redis (--store memory only checks them). Bad rows are reported with their line and
  skipped; more than --max-bad-rows (default 100) aborts the load.`;

const storeKinds = ['memory', 'redis'] as const;
type StoreKind = (typeof storeKinds)[number];

/**
 * The words after `featurestore` on the command line. main's parse (non-strict) turns `--port 5000`
 * into a flag and a positional, so options are read from the process arguments when they are ours.
 */
function commandArgs(context: CliContext, argv: string[]): string[] {
  const at = argv.indexOf('featurestore');
  return at >= 0 ? argv.slice(at + 1) : context.args;
}

export async function runFeatureStore(context: CliContext, argv = process.argv.slice(2)): Promise<void> {
  const [subcommand, ...args] = commandArgs(context, argv);
  if (subcommand === 'serve') return serve(context, args);
  if (subcommand === 'load') return load(context, args);
  if (subcommand === undefined || subcommand === 'help' || subcommand === '--help' || subcommand === '-h') {
    console.log(usage);
    return;
  }
  throw invalidArgument(`featurestore: unknown subcommand "${subcommand}"\n\n${usage}`);
}

/** Runs a strict parseArgs; an unknown or malformed option is INVALID_ARGUMENT with the usage. */
function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw invalidArgument(`featurestore: ${describeError(err)}\n\n${usage}`);
  }
}

/** `--settings` is main's option; accepted here too since the command reads the whole line. */
const settingsOption = { settings: { type: 'string' } } as const;

function storeKind(value: string | boolean | undefined, fallback: StoreKind): StoreKind {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (storeKinds as readonly string[]).includes(value))
    return value as StoreKind;
  throw invalidArgument(`--store must be memory or redis, got ${String(value)}`, '--store');
}

function wholeNumber(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isInteger(n) || n < 0) {
    throw invalidArgument(`${flag} must be a whole number, got ${String(value)}`, flag);
  }
  return n;
}

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

async function serve(context: CliContext, args: string[]): Promise<void> {
  const { values, positionals } = parsed(() =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        ...settingsOption,
        registry: { type: 'string' },
        store: { type: 'string' },
        port: { type: 'string' },
        'fill-defaults': { type: 'boolean' },
        demo: { type: 'boolean' },
        load: { type: 'string', multiple: true },
      },
    }),
  );
  if (positionals.length > 0) throw invalidArgument(`featurestore serve: unexpected "${positionals[0]}"`);
  const settings = loadSettings({ file: context.settingsFile });
  serveTlsByDefault(tlsOf(settings).server);
  const logger = createLogger('featurestore', { level: settings.logLevel });
  const kind = storeKind(values.store, settings.cache.kind);
  const port = wholeNumber(values.port, '--port') ?? DEFAULT_FEATURESTORE_PORT;
  const registry: FeatureRegistry = values.registry
    ? FeatureRegistry.fromFile(values.registry)
    : demoRegistry();
  const loads = (values.load ?? []).map((spec) => {
    const at = spec.indexOf('=');
    if (at <= 0 || at === spec.length - 1) {
      throw invalidArgument(`--load takes ENTITY=FILE, got ${JSON.stringify(spec)}`, '--load');
    }
    return { entity: registry.requireEntity(spec.slice(0, at), '--load').name, file: spec.slice(at + 1) };
  });

  const store = await openStore(kind, settings);
  try {
    if (values.demo || (!values.registry && kind === 'memory')) {
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

  const running = await startFeatureStore({
    registry,
    store,
    host: settings.host,
    port,
    fillDefaults: values['fill-defaults'] === true,
    auth: callerAuth(settings),
    logger,
    metrics: new Metrics(),
    maxMessageBytes: settings.grpc.maxMessageBytes,
    shutdownGraceMs: settings.grpc.shutdownGraceMs,
    defaultDeadlineMs: settings.grpc.defaultDeadlineMs,
    maxInFlightCalls: settings.grpc.maxInFlightCalls,
    closeStore: true,
  });
  onShutdownSignal(logger, () => running.stop());
  const entities = registry.entities.map((entity) => entity.name).join(', ');
  console.log(
    `Feature store listening on ${running.address} (${kind} store; entities: ${entities}${values['fill-defaults'] ? '; unknown keys get defaults' : ''})`,
  );
  console.log('Ctrl-C stops it, draining in-flight calls.');
}

async function load(context: CliContext, args: string[]): Promise<void> {
  const { values, positionals: files } = parsed(() =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        ...settingsOption,
        registry: { type: 'string' },
        entity: { type: 'string' },
        store: { type: 'string' },
        format: { type: 'string' },
        'batch-size': { type: 'string' },
        'max-bad-rows': { type: 'string' },
        'ttl-seconds': { type: 'string' },
        delimiter: { type: 'string' },
        quiet: { type: 'boolean' },
      },
    }),
  );
  if (!values.registry) throw invalidArgument('featurestore load: --registry FILE is required', '--registry');
  if (!values.entity) throw invalidArgument('featurestore load: --entity E is required', '--entity');
  if (files.length === 0) throw invalidArgument('featurestore load: name at least one file to load');
  const format = values.format;
  if (format !== undefined && format !== 'csv' && format !== 'jsonl' && format !== 'parquet') {
    throw invalidArgument(`--format must be csv, jsonl or parquet, got ${format}`, '--format');
  }
  const settings = loadSettings({ file: context.settingsFile });
  const registry = FeatureRegistry.fromFile(values.registry);
  registry.requireEntity(values.entity, '--entity');
  const kind = storeKind(values.store, 'redis');
  const ttlSeconds = wholeNumber(values['ttl-seconds'], '--ttl-seconds');
  const quiet = values.quiet === true;

  const store = await openStore(kind, settings);
  let printed = 0;
  try {
    const report = await loadFeatureFiles({
      registry,
      store,
      entity: values.entity,
      files,
      format: format as LoadFormat | undefined,
      delimiter: values.delimiter,
      batchSize: wholeNumber(values['batch-size'], '--batch-size') || undefined,
      maxBadRows: wholeNumber(values['max-bad-rows'], '--max-bad-rows'),
      ttlMs: ttlSeconds ? ttlSeconds * 1000 : undefined,
      progress: quiet ? false : {},
      onBadRow: (bad) => {
        if (printed++ < 20) console.error(`bad row: ${describeBadRow(bad)}`);
        else if (printed === 21) console.error('bad row: … (more are counted, not shown)');
      },
    });
    const seconds = (report.elapsedMs / 1000).toFixed(1);
    console.log(
      `Loaded ${report.rowsWritten} ${report.entity} rows from ${report.files.length} file(s) into the ${kind} store in ${seconds} s; ${report.badRows} bad row(s) skipped`,
    );
  } finally {
    await store.close();
  }
}
