/**
 * The two named clusters (vss.md "Concepts"): `experiment` is the service's vector DB
 * (`vss.vectorDb`, with the platform cache), `production` the one `vss.clusters.production` names
 * (with its own result-cache key prefix; it must be another database: collection names do not say
 * the cluster, so two names for one Qdrant server would mix them). A variant is searched, written and indexed on the vector
 * DB of its `cluster`; serving, the consumers and admin all route through this one value, so a
 * variant means the same place everywhere.
 *
 * While a variant is being promoted, its version is also written to production (so nothing written
 * during the copy is missed there): the promote operation records `promoting: {version, variants}`
 * in its result once the production collection exists, and {@link promotingVariants} reads it.
 */
import { LatticeError } from '../../platform/errors.js';
import type { VectorDb } from '../../platform/vectordb/index.js';
import type { Cluster, JsonObject, Operation, Variant } from '../store/index.js';

export interface ClusterVectorDbsOptions {
  /** The production cluster's vector DB; absent: this process reaches experiment only. */
  production?: VectorDb;
  /** Prefix of distributed result-cache keys of production variants (`vss.clusters.production.cacheKeyPrefix`). */
  productionCacheKeyPrefix?: string;
}

export class ClusterVectorDbs {
  readonly #production: VectorDb | undefined;
  readonly #productionPrefix: string;

  constructor(
    readonly experiment: VectorDb,
    options: ClusterVectorDbsOptions = {},
  ) {
    // One vector DB under both names would hold one collection per version for both clusters, and
    // each cluster's writes would overwrite the other's membership flags.
    if (options.production === experiment) {
      throw new TypeError('the production cluster needs a vector DB of its own, not the experiment one');
    }
    this.#production = options.production;
    this.#productionPrefix = options.productionCacheKeyPrefix ?? 'production:';
  }

  /** Experiment only (the callers that pass one vector DB). */
  static single(vectorDb: VectorDb): ClusterVectorDbs {
    return new ClusterVectorDbs(vectorDb);
  }

  has(cluster: Cluster): boolean {
    return cluster === 'experiment' || this.#production !== undefined;
  }

  /** The cluster's vector DB; FAILED_PRECONDITION when this process has no production vector DB. */
  of(cluster: Cluster, forVariant?: string): VectorDb {
    if (cluster === 'experiment') return this.experiment;
    if (this.#production !== undefined) return this.#production;
    const who =
      forVariant === undefined ? 'the production cluster' : `variant ${forVariant} is in production`;
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${who}, and this process has no production vector database: configure vss.clusters.production (LATTICE_VSS_PRODUCTION_VECTOR_DB)`,
      { field: 'cluster' },
    );
  }

  /** Prefix of the cluster's distributed result-cache keys ('' for experiment). */
  cacheKeyPrefix(cluster: Cluster): string {
    return cluster === 'production' ? this.#productionPrefix : '';
  }
}

/**
 * Variants being promoted, from the model's unfinished PROMOTE_* operations: name → the version
 * written to production meanwhile.
 */
export function promotingVariants(operations: readonly Operation[]): Map<string, number> {
  const promoting = new Map<string, number>();
  for (const op of operations) {
    if (op.kind !== 'PROMOTE_VARIANT' && op.kind !== 'PROMOTE_MODEL') continue;
    if (op.status !== 'PENDING' && op.status !== 'RUNNING') continue;
    const marker = op.result?.promoting;
    if (marker === null || typeof marker !== 'object' || Array.isArray(marker)) continue;
    const { version, variants } = marker as JsonObject;
    if (typeof version !== 'number' || !Array.isArray(variants)) continue;
    for (const name of variants) if (typeof name === 'string') promoting.set(name, version);
  }
  return promoting;
}

/** A collection a variant's points go to: the model version's on a cluster. */
export interface ClusterVersion {
  readonly cluster: Cluster;
  readonly version: number;
}

/**
 * Where a variant's points live: its read version and (while newer or alone) its write version on
 * its cluster, plus the version being promoted on production.
 */
export function variantCollections(
  variant: Pick<Variant, 'cluster' | 'readVersion' | 'writeVersion'>,
  promotingVersion?: number,
): ClusterVersion[] {
  const out: ClusterVersion[] = [];
  for (const version of new Set([variant.readVersion, variant.writeVersion])) {
    if (version !== null) out.push({ cluster: variant.cluster, version });
  }
  if (promotingVersion !== undefined && variant.cluster !== 'production') {
    out.push({ cluster: 'production', version: promotingVersion });
  }
  return out;
}
