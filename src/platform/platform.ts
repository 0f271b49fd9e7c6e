// Every adapter is imported when its port is first opened, not with this module: a process (or a
// `lattice` command) that needs no SQL never loads PGlite or pg, and none without vss loads hnswlib or
// Qdrant's client. The VectorDb port (architecture.md, "Ports and adapters") lives beside vss, its one user.

import type { Cache } from './cache/index.js';
import type { ConfigStore } from './config-store/index.js';
import { invalidArgument } from './errors.js';
import { type ReadinessCheck, readinessWithin } from './http/readiness.js';
import { createLogger, type Logger } from './logging/index.js';
import { Metrics } from './metrics/index.js';
import { TopicNotFoundError } from './queue/errors.js';
import type { DiscardReason, Queue } from './queue/index.js';
import type { LoadedSettings } from './settings/index.js';
import type { SqlClient } from './sql/index.js';
import type { VectorDb } from './vectordb/index.js';

interface Opened {
  name: string;
  ready: ReadinessCheck;
  close: () => Promise<void>;
}

/**
 * The composition root of a process: settings in, the logger, the metrics and the adapter each port's
 * settings select out. Adapters open on first use (a part that needs no SQL never starts PGlite), once
 * per process, and `close()` closes them in reverse order.
 */
export class Platform {
  readonly logger: Logger;
  readonly metrics: Metrics;
  private readonly opening = new Map<string, Promise<unknown>>();
  private readonly opened: Opened[] = [];

  constructor(
    readonly settings: LoadedSettings,
    options: { logger?: Logger; metrics?: Metrics } = {},
  ) {
    this.logger = options.logger ?? createLogger('lattice', { level: settings.logLevel });
    const { statsdHost, statsdPort, statsdPrefix, statsdTags } = settings.metrics;
    this.metrics =
      options.metrics ??
      new Metrics({
        processMetrics: true,
        statsd: statsdHost
          ? { host: statsdHost, port: statsdPort, prefix: statsdPrefix, tags: statsdTags }
          : undefined,
      });
  }

  private open<T>(
    name: string,
    create: () => Promise<T>,
    ready: (adapter: T) => Promise<unknown>,
    close: (adapter: T) => Promise<void>,
  ): Promise<T> {
    let pending = this.opening.get(name) as Promise<T> | undefined;
    if (!pending) {
      pending = create().then(
        (adapter) => {
          this.opened.push({
            name,
            ready: async () => void (await ready(adapter)),
            close: () => close(adapter),
          });
          return adapter;
        },
        (err: unknown) => {
          this.opening.delete(name); // a later call may try again
          throw err;
        },
      );
      this.opening.set(name, pending);
    }
    return pending;
  }

  configStore(): Promise<ConfigStore> {
    const s = this.settings.configStore;
    return this.open(
      'configStore',
      async () =>
        (await import('./config-store/index.js')).createConfigStore(
          s.kind === 'file'
            ? { kind: 'file', dir: s.dir }
            : { kind: 'etcd', endpoints: [...s.endpoints], prefix: s.prefix, dialTimeoutMs: s.dialTimeoutMs },
        ),
      (store) => store.list('lattice-readiness/'),
      (store) => store.close(),
    );
  }

  sqlClient(): Promise<SqlClient> {
    const s = this.settings.sql;
    return this.open(
      'sql',
      async () => {
        const { createSqlClient } = await import('./sql/index.js');
        if (s.kind === 'pglite') {
          return createSqlClient({
            kind: 'pglite',
            dataDir: s.dataDir,
            statementTimeoutMs: s.statementTimeoutMs,
            sharedBuffersMb: s.sharedBuffersMb,
            // pgvector's files are unpacked at every open: only when a vector DB is on it.
            vector: this.pgvectorOnSql(),
          });
        }
        const connect = (searchPath: string | undefined) =>
          createSqlClient({
            kind: 'postgres',
            url: s.url,
            ...(searchPath === undefined ? {} : { searchPath }),
            poolSize: s.poolSize,
            connectTimeoutMs: s.connectTimeoutMs,
            statementTimeoutMs: s.statementTimeoutMs,
          });
        const client = await connect(s.schema);
        if (s.schema === undefined || !this.pgvectorOnSql()) return client;
        // The schema alone is the search_path, so Lattice's tables live there; pgvector's types and
        // operators live where the extension was created (public, usually, shared by every schema of
        // the database): that schema follows, or no `vector` column could be named.
        const extension = await client
          .query<{ schema: string }>(
            `SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
              WHERE e.extname = 'vector'`,
          )
          .catch(async (err: unknown) => {
            await client.close();
            throw err;
          });
        const where = extension.rows[0]?.schema;
        if (where === undefined || where === s.schema) return client;
        await client.close();
        return connect(`${s.schema}, ${where}`);
      },
      (sql) => sql.query('select 1'),
      (sql) => sql.close(),
    );
  }

  /** Whether a vss cluster keeps its vector database in the SQL database (kind `pgvector`). */
  private pgvectorOnSql(): boolean {
    const { vectorDb, clusters } = this.settings.vss;
    return vectorDb.kind === 'pgvector' || clusters.production.vectorDb.kind === 'pgvector';
  }

  cache(): Promise<Cache> {
    const s = this.settings.cache;
    return this.open(
      'cache',
      async () =>
        (await import('./cache/index.js')).createCache(
          s.kind === 'memory'
            ? { kind: 'memory', maxBytes: s.maxBytes }
            : { kind: 'redis', url: s.url, keyPrefix: s.keyPrefix, connectTimeoutMs: s.connectTimeoutMs },
        ),
      (cache) => cache.get('lattice-readiness'),
      (cache) => cache.close(),
    );
  }

  /**
   * The queue. On the memory queue, every message retention discards before all its groups settled it
   * is counted in `queue_discarded_messages_total{topic,reason}` (reason `age` or `bytes`); JetStream
   * discards on the server, where the stream's state shows it.
   */
  queue(): Promise<Queue> {
    const s = this.settings.queue;
    return this.open(
      'queue',
      async () =>
        (await import('./queue/index.js')).createQueue(
          s.kind === 'memory'
            ? {
                kind: 'memory',
                journalDir: s.journalDir,
                logger: this.logger,
                onDiscard: this.countDiscards(),
              }
            : {
                kind: 'jetstream',
                servers: [...s.servers],
                connectTimeoutMs: s.connectTimeoutMs,
                logger: this.logger,
              },
        ),
      // Any answer about a topic, even "no such topic", shows the queue is serving.
      (queue) =>
        queue.describeTopic('lattice-readiness').catch((err: unknown) => {
          if (!(err instanceof TopicNotFoundError)) throw err;
        }),
      (queue) => queue.close(),
    );
  }

  private countDiscards(): (topic: string, reason: DiscardReason) => void {
    const discarded = this.metrics.counter(
      'queue_discarded_messages_total',
      'Queue messages retention discarded before every consumer group settled them, by topic and reason (age, bytes)',
      ['topic', 'reason'],
    );
    return (topic, reason) => discarded.inc({ topic, reason });
  }

  /**
   * The vector database of vss (the experiment cluster's): embedded (snapshots in
   * `vss.vectorDb.dir`), Qdrant, which is reached once on opening so an unreachable one fails at
   * start-up naming its URL, or pgvector on the SQL client (tables `vectordb_*`).
   */
  vectorDb(): Promise<VectorDb> {
    return this.openVectorDb('vectorDb', 'vss.vectorDb', this.settings.vss.vectorDb, 'vectordb_');
  }

  /**
   * The production cluster's vector database (`vss.clusters.production.vectorDb`), opened like
   * {@link vectorDb} (the experiment cluster's): on first use, reported on /readyz as
   * `productionVectorDb` from then on, closed by `close()`.
   */
  productionVectorDb(): Promise<VectorDb> {
    return this.openVectorDb(
      'productionVectorDb',
      'vss.clusters.production.vectorDb',
      this.settings.vss.clusters.production.vectorDb,
      'vectordb_production_',
    );
  }

  /** `tablePrefix`: pgvector's tables, apart per cluster when both clusters share the SQL database. */
  private openVectorDb(
    name: string,
    path: string,
    s: {
      kind: 'embedded' | 'qdrant' | 'pgvector';
      dir: string;
      buildThreads?: number;
      searchThreads?: number;
      url?: string;
      apiKey?: string;
      timeoutMs: number;
    },
    tablePrefix: string,
  ): Promise<VectorDb> {
    return this.open(
      name,
      async () => {
        const { createVectorDb } = await import('./vectordb/index.js');
        if (s.kind === 'pgvector') {
          return createVectorDb({ kind: 'pgvector', sql: await this.sqlClient(), tablePrefix });
        }
        if (s.kind === 'embedded') {
          return createVectorDb({
            kind: 'embedded',
            dir: s.dir,
            ...(s.buildThreads === undefined ? {} : { buildThreads: s.buildThreads }),
            ...(s.searchThreads === undefined ? {} : { searchThreads: s.searchThreads }),
          });
        }
        // The settings schema already requires the URL for qdrant; this narrows its type.
        if (s.url === undefined) throw invalidArgument(`${path}.url is required for qdrant`, `${path}.url`);
        return createVectorDb({ kind: 'qdrant', url: s.url, apiKey: s.apiKey, timeoutMs: s.timeoutMs });
      },
      (db) => db.listCollections(),
      (db) => db.close(),
    );
  }

  /**
   * Readiness checks of every adapter opened so far, for /readyz and `lattice check`; each is bounded
   * by `metrics.readyTimeoutMs`, so a hung adapter is reported as timed out rather than waited on.
   */
  readiness(): Record<string, ReadinessCheck> {
    const timeoutMs = this.settings.metrics.readyTimeoutMs;
    return Object.fromEntries(
      this.opened.map(({ name, ready }) => [name, () => readinessWithin(name, timeoutMs, ready)]),
    );
  }

  /** Closes every opened adapter (the vector database included), last opened first, then the metrics channel. */
  async close(): Promise<void> {
    for (const { name, close } of this.opened.splice(0).reverse()) {
      try {
        await close();
      } catch (err) {
        this.logger.warn({ err, port: name }, 'closing an adapter failed');
      }
    }
    this.opening.clear();
    await this.metrics.close();
  }
}
