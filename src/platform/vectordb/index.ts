/**
 * The vector database port and its adapters. vss imports from here only and picks the adapter by
 * configuration with `createVectorDb`; see vector-db.ts for the guarantees every adapter keeps.
 */
import { EmbeddedVectorDb, type EmbeddedVectorDbOptions } from './embedded/collection/embedded-vector-db.js';
import { PgvectorVectorDb, type PgvectorVectorDbOptions } from './pgvector/pgvector-vector-db.js';
import { QdrantVectorDb, type QdrantVectorDbOptions } from './qdrant/qdrant-vector-db.js';
import type { VectorDb } from './vector-db.js';

export type { SearchStats } from './embedded/collection/collection.js';
export type { QueryExplanation } from './embedded/collection/collection-search.js';
export {
  EmbeddedVectorDb,
  type EmbeddedVectorDbOptions,
  type StorageStats,
} from './embedded/collection/embedded-vector-db.js';
export type { PlannerSettings, QueryPlan } from './embedded/collection/query-planner.js';
export { type CompiledFilter, compileFilters, isFilterOp, matchesAll, matchesFilter } from './filters.js';
export {
  type PgvectorSearchStats,
  PgvectorVectorDb,
  type PgvectorVectorDbOptions,
} from './pgvector/pgvector-vector-db.js';
export { QdrantVectorDb, type QdrantVectorDbOptions } from './qdrant/qdrant-vector-db.js';
export { LIMITS } from './validation.js';
export * from './vector-db.js';

export type VectorDbOptions =
  | ({ kind: 'embedded' } & EmbeddedVectorDbOptions)
  | ({ kind: 'qdrant' } & QdrantVectorDbOptions)
  | ({ kind: 'pgvector' } & PgvectorVectorDbOptions);

/**
 * Opens the configured vector database: the embedded engine, a Qdrant server (reached once here,
 * so an unreachable one fails at start-up with UNAVAILABLE naming its URL), or pgvector on a SQL
 * database (its extension and catalog made sure of here).
 */
export async function createVectorDb(options: VectorDbOptions): Promise<VectorDb> {
  switch (options.kind) {
    case 'embedded': {
      const { kind: _kind, ...embedded } = options;
      return EmbeddedVectorDb.open(embedded);
    }
    case 'qdrant': {
      const { kind: _kind, ...qdrant } = options;
      return QdrantVectorDb.open(qdrant);
    }
    case 'pgvector': {
      const { kind: _kind, ...pgvector } = options;
      return PgvectorVectorDb.open(pgvector);
    }
  }
}
