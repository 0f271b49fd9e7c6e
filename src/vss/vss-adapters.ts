/**
 * The adapters vss serving, consumers and admin run on, opened from the platform: the SQL client,
 * the experiment cluster's vector DB, the production cluster's (when it can be opened), and the one
 * routing between them that the three share.
 */
import type { Platform } from '../platform/platform.js';
import type { VectorDb } from '../platform/vectordb/index.js';
import { ClusterVectorDbs } from './model/index.js';
import type { VectorDbType } from './store/index.js';

/** The `vectordb_type` variants name for a vector database kind of the settings (`vss.vectorDb.kind`). */
export function vectorDbTypeOf(kind: 'embedded' | 'qdrant' | 'pgvector'): VectorDbType {
  switch (kind) {
    case 'embedded':
      return 'EMBEDDED';
    case 'qdrant':
      return 'QDRANT';
    case 'pgvector':
      return 'PGVECTOR';
  }
}

/**
 * The vector database first: when another process owns the embedded one's data directory, its lock
 * says to run the vss components together or use a server (the SQL and queue locks would not).
 */
export async function openVssAdapters(platform: Platform) {
  const vectorDb = await platform.vectorDb();
  const production = await openProductionVectorDb(platform);
  const sql = await platform.sqlClient();
  return { vectorDb, vectorDbs: clusterVectorDbs(platform, vectorDb, production), sql };
}

/**
 * The production cluster's vector DB, unless it is the embedded default beside an experiment vector
 * DB server: an embedded database lives inside one process, which a scaled-out deployment (Qdrant
 * or pgvector, processes per component) does not have; configure a production server there to promote.
 */
export async function openProductionVectorDb(platform: Platform): Promise<VectorDb | undefined> {
  const { vectorDb, clusters } = platform.settings.vss;
  if (vectorDb.kind !== 'embedded' && clusters.production.vectorDb.kind === 'embedded') return undefined;
  return platform.productionVectorDb();
}

const clusters = new WeakMap<Platform, ClusterVectorDbs>();

/**
 * One routing value per process (vss.md "Concepts": each variant is searched, written and indexed on
 * its cluster's vector DB), shared by serving, the consumers and admin, so they agree on it.
 */
function clusterVectorDbs(
  platform: Platform,
  experiment: VectorDb,
  production: VectorDb | undefined,
): ClusterVectorDbs {
  let routing = clusters.get(platform);
  if (routing === undefined) {
    routing = new ClusterVectorDbs(experiment, {
      ...(production === undefined ? {} : { production }),
      productionCacheKeyPrefix: platform.settings.vss.clusters.production.cacheKeyPrefix,
    });
    clusters.set(platform, routing);
  }
  return routing;
}
