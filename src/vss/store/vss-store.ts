/**
 * The vss SQL store: every repository over one SqlClient, and transactions that bind them all to
 * one transaction, so an admin step can commit its state change together with its effect record.
 */
import {
  type MigrationReport,
  migrate,
  type SqlClient,
  type SqlQueryable,
} from '../../platform/sql/index.js';
import { AggregatorRepository } from './aggregator-repository.js';
import { EmbeddingsRepository } from './embeddings-repository.js';
import { ColumnCache, EntityTables } from './entity-tables.js';
import { IngestionRepository } from './ingestion-repository.js';
import { LiveRecallRepository } from './live-recall-repository.js';
import { VSS_MIGRATIONS_TABLE, vssMigrations } from './migrations.js';
import { ModelsRepository } from './models-repository.js';
import { OperationsRepository } from './operations-repository.js';
import { flipReadVersion, type ReadVersionFlip } from './read-version.js';
import { type ModelRollback, rollBackModel } from './rollback.js';
import { StoresRepository } from './stores-repository.js';
import type { ModelKey, VariantKey } from './types.js';
import { VariantsRepository } from './variants-repository.js';
import { type VectorTransport, vectorTransport } from './vector-bytes.js';
import { VersionsRepository } from './versions-repository.js';

export interface VssRepositories {
  readonly stores: StoresRepository;
  readonly models: ModelsRepository;
  readonly variants: VariantsRepository;
  readonly versions: VersionsRepository;
  readonly operations: OperationsRepository;
  readonly embeddings: EmbeddingsRepository;
  readonly aggregator: AggregatorRepository;
  readonly entityTables: EntityTables;
  /** Ingestion jobs, their EOF markers and counts (the consumers write, the admin reads). */
  readonly ingestion: IngestionRepository;
  /** Serving's live recall samples, for the automatic rollback. */
  readonly liveRecall: LiveRecallRepository;
  /** See read-version.ts. */
  flipReadVersion(key: VariantKey, version: number): Promise<ReadVersionFlip>;
  /** See rollback.ts. */
  rollBackModel(model: ModelKey, options: { graceMs: number }): Promise<ModelRollback>;
}

class BoundRepositories implements VssRepositories {
  readonly stores: StoresRepository;
  readonly models: ModelsRepository;
  readonly variants: VariantsRepository;
  readonly versions: VersionsRepository;
  readonly operations: OperationsRepository;
  readonly embeddings: EmbeddingsRepository;
  readonly aggregator: AggregatorRepository;
  readonly entityTables: EntityTables;
  readonly ingestion: IngestionRepository;
  readonly liveRecall: LiveRecallRepository;

  constructor(
    private readonly db: SqlQueryable,
    columns: ColumnCache,
    vectors: VectorTransport,
  ) {
    this.stores = new StoresRepository(db);
    this.models = new ModelsRepository(db);
    this.variants = new VariantsRepository(db);
    this.versions = new VersionsRepository(db);
    this.operations = new OperationsRepository(db);
    this.entityTables = new EntityTables(db, columns);
    this.embeddings = new EmbeddingsRepository(db, this.entityTables, vectors);
    this.aggregator = new AggregatorRepository(db, this.entityTables);
    this.ingestion = new IngestionRepository(db);
    this.liveRecall = new LiveRecallRepository(db);
  }

  flipReadVersion(key: VariantKey, version: number): Promise<ReadVersionFlip> {
    return flipReadVersion(this.db, key, version);
  }

  rollBackModel(model: ModelKey, options: { graceMs: number }): Promise<ModelRollback> {
    return rollBackModel(this.db, model, options);
  }
}

export class VssStore extends BoundRepositories {
  private constructor(private readonly sql: SqlClient) {
    super(sql, new ColumnCache(), vectorTransport(sql.kind));
  }

  /** Brings the schema up to date (safe from several replicas at once) and opens the store. */
  static async open(sql: SqlClient): Promise<VssStore> {
    await migrateVssStore(sql);
    return new VssStore(sql);
  }

  /**
   * Runs `fn` with repositories bound to one transaction: all its statements commit together or
   * not at all. Inside, use only the given repositories (the store's own would wait for, or run
   * outside, this transaction and are refused).
   */
  transaction<T>(fn: (repositories: VssRepositories) => Promise<T>): Promise<T> {
    // A column added inside may still roll back: the transaction gets its own column cache.
    return this.sql.transaction((tx) =>
      fn(new BoundRepositories(tx, new ColumnCache(), vectorTransport(this.sql.kind))),
    );
  }
}

/** Applies the vss migrations not yet applied (table `vss_schema_migrations`). */
export function migrateVssStore(sql: SqlClient): Promise<MigrationReport> {
  return migrate(sql, vssMigrations, { table: VSS_MIGRATIONS_TABLE });
}

/** Runs the migrations and returns the store; the caller keeps owning (and closes) `sql`. */
export function openVssStore(sql: SqlClient): Promise<VssStore> {
  return VssStore.open(sql);
}
