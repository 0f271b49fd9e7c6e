import { type Command, Option } from 'commander';
import { addressOption } from '../address-option.js';
import {
  type CliSession,
  lazyAction,
  portNumber,
  repeatable,
  settingsOption,
  wholeNumber,
} from '../command-kit.js';

export const DEFAULT_FEATURESTORE_PORT = 50052;

export interface FeatureStoreServeOptions {
  registry?: string;
  store?: 'memory' | 'redis';
  port?: number;
  fillDefaults?: boolean;
  demo?: boolean;
  load?: string[];
}

export interface FeatureStoreLoadOptions {
  registry: string;
  entity: string;
  store?: 'server' | 'memory' | 'redis';
  address?: string;
  format?: 'csv' | 'jsonl' | 'parquet';
  batchSize?: number;
  maxBadRows?: number;
  ttlSeconds?: number;
  delimiter?: string;
  quiet?: boolean;
}

/** `lattice featurestore serve | load`. */
export function defineFeatureStore(program: Command, session: CliSession): void {
  const featurestore = program
    .command('featurestore')
    .summary('the reference feature store: "serve", and "load" CSV/JSONL/Parquet')
    .description('The reference online feature store (retrieve.FeatureService) and its bulk loader.')
    .addOption(settingsOption());

  const serve = featurestore
    .command('serve')
    .summary('serve RetrieveFeatures / RetrieveDecodedResult')
    .description(
      "Answers RetrieveFeatures / RetrieveDecodedResult at the settings' host. Without --registry the " +
        'demo registry is served, seeded with demo rows on the memory store (--demo seeds them on any ' +
        'store). Unknown keys answer with an empty columns list, or the registry defaults with ' +
        '--fill-defaults. Caller tokens (auth.callerTokens) turn on caller-token auth.',
    )
    .option(
      '--registry <FILE>',
      'the feature registry, YAML or JSON (default settings featurestore.registry)',
    )
    .addOption(
      new Option(
        '--store <KIND>',
        "where features live (default the settings' cache kind; Redis is cache.url)",
      ).choices(['memory', 'redis']),
    )
    .option(
      '--port <N>',
      `the gRPC port, 0 picks a free one (default settings featurestore.port, ${DEFAULT_FEATURESTORE_PORT})`,
      portNumber,
    )
    .option('--fill-defaults', 'answer unknown keys with the registry defaults')
    .option('--demo', 'seed the demo rows (on any store)')
    .option('--load <ENTITY=FILE>', 'load a file into the store before serving, repeatable', repeatable);
  lazyAction<FeatureStoreServeOptions>(
    serve,
    session,
    async () => (await import('./featurestore.js')).runFeatureStoreServe,
  );

  const load = featurestore
    .command('load')
    .summary('bulk-load CSV, JSON Lines or Parquet files into the store')
    .description(
      'Bulk-loads CSV (header: key columns, then group:feature or feature), JSON Lines or Parquet files ' +
        'into a running feature store (--store server: the one "lattice up" or "lattice featurestore serve" ' +
        "serves, at <host>:<featurestore.port> or --address; the registry's entities are registered there " +
        'first, and "lattice up" keeps both across restarts), into Redis (--store redis: cache.url), or ' +
        "only checks them (--store memory). The default is redis when the settings' cache is Redis, " +
        'server otherwise. Bad rows are reported with their line and skipped; more than --max-bad-rows ' +
        'aborts the load.',
    )
    .argument('<files...>', 'the files to load')
    .requiredOption('--registry <FILE>', 'the feature registry (YAML or JSON)')
    .requiredOption('--entity <E>', 'the entity the rows belong to')
    .addOption(
      new Option('--store <KIND>', 'where to load (default server, or redis with a Redis cache)').choices([
        'server',
        'redis',
        'memory',
      ]),
    )
    .addOption(
      addressOption(
        'grpc',
        'the running feature store (--store server; default <host>:<featurestore.port> from the settings)',
      ),
    )
    .addOption(
      new Option('--format <F>', 'the file format (default from each file name)').choices([
        'csv',
        'jsonl',
        'parquet',
      ]),
    )
    .option('--batch-size <N>', 'rows per write', wholeNumber)
    .option('--max-bad-rows <N>', 'bad rows skipped before the load aborts (default 100)', wholeNumber)
    .option('--ttl-seconds <N>', 'expiry of the loaded rows', wholeNumber)
    .option('--delimiter <C>', 'the CSV delimiter')
    .option('--quiet', 'no progress on stderr');
  lazyAction<FeatureStoreLoadOptions>(
    load,
    session,
    async () => (await import('./featurestore.js')).runFeatureStoreLoad,
  );
}
