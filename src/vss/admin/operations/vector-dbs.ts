/**
 * The vector databases the admin can reach: in the experiment cluster by the kind variants name
 * (`vectordb_type`), and the production cluster's one (`production`: every variant promoted there,
 * whatever its kind; model/cluster-vector-dbs.ts); and the
 * collection each model version gets on one of them: one per (model version, vector DB), shared by
 * the variants on it (vss.md), named by the shared rule (model/collection-name.ts) and created with
 * the HNSW parameters of the variants' `vectordb_config` (or the service defaults).
 */
import { isLatticeError, LatticeError } from '../../../platform/errors.js';
import type { VectorDb } from '../../../platform/vectordb/index.js';
import { collectionName, hnswOf } from '../../model/index.js';
import type { Cluster, Model, Variant, VectorDbType } from '../../store/index.js';

/** Where a variant's collections live: an experiment vector DB by kind, or the production cluster's. */
export type DbTarget = VectorDbType | 'production';

/** The target of a variant on `cluster` (default its own). */
export function targetOf(variant: Pick<Variant, 'cluster' | 'vectorDbType'>, cluster?: Cluster): DbTarget {
  return (cluster ?? variant.cluster) === 'production' ? 'production' : variant.vectorDbType;
}

export class VectorDbs {
  readonly #dbs: Map<DbTarget, VectorDb>;

  /**
   * `primary` is this process's vector DB (`vectorDbType`, the experiment cluster's); `others` any
   * further ones it may reach; `production` the production cluster's.
   */
  constructor(
    readonly primaryType: VectorDbType,
    primary: VectorDb,
    others: Partial<Record<VectorDbType, VectorDb>> = {},
    production?: VectorDb,
  ) {
    this.#dbs = new Map(Object.entries(others) as [VectorDbType, VectorDb][]);
    this.#dbs.set(primaryType, primary);
    if (production !== undefined) this.#dbs.set('production', production);
  }

  /** The vector DB of `target`; FAILED_PRECONDITION (naming the variant) when this admin has none. */
  get(target: DbTarget, forVariant?: string): VectorDb {
    const db = this.#dbs.get(target);
    if (db !== undefined) return db;
    if (target === 'production') {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${forVariant === undefined ? 'the production cluster' : `variant ${forVariant} is in production`}, and this admin has no production vector database: configure vss.clusters.production (LATTICE_VSS_PRODUCTION_VECTOR_DB)`,
        { field: 'cluster' },
      );
    }
    const who = forVariant === undefined ? '' : `variant ${forVariant} is on `;
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${who}a ${target} vector database, and this admin is connected to ${[...this.#dbs.keys()].join(', ')} only: configure the ${target} vector database for vss admin`,
      { field: 'vectordb_type' },
    );
  }

  /** The variant's vector DB (its cluster's). */
  forVariant(variant: Variant): VectorDb {
    return this.get(targetOf(variant), variant.variant);
  }

  /** Whether this admin reaches `target`. */
  has(target: DbTarget): boolean {
    return this.#dbs.has(target);
  }

  /** The variants grouped by the vector DB they use (their cluster's), each group's DB checked reachable. */
  byType(variants: readonly Variant[]): Map<DbTarget, Variant[]> {
    const groups = new Map<DbTarget, Variant[]>();
    for (const variant of variants) {
      const target = targetOf(variant);
      this.get(target, variant.variant);
      const group = groups.get(target);
      if (group === undefined) groups.set(target, [variant]);
      else group.push(variant);
    }
    return groups;
  }

  /**
   * Creates the version's collection on `type` unless it exists (idempotent: a crash after creating
   * it runs this again). An existing one is accepted when its dimension and distance are the
   * model's, whatever its HNSW settings (the consumers may have created it first).
   */
  async ensureCollection(model: Model, version: number, type: DbTarget, variants: readonly Variant[]) {
    const db = this.get(type, variants[0]?.variant);
    const name = collectionName(model.entity, model.modelName, version);
    const { vectorDimension: dimension, distanceFunction: distance } = model.modelConfig;
    try {
      await db.createCollection({ name, dimension, distance, hnsw: hnswOf(variants) });
    } catch (err) {
      if (!isLatticeError(err, 'ALREADY_EXISTS')) throw err;
      const info = await db.collectionInfo(name);
      if (info.dimension !== dimension || info.distance !== distance) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `collection ${name} exists with dimension ${info.dimension} and distance ${info.distance}, but the model has ${dimension} and ${distance}`,
        );
      }
    }
    return name;
  }

  /** Drops the version's collection on `type` if it is there; true when it was. */
  async dropCollection(model: { entity: string; modelName: string }, version: number, type: DbTarget) {
    return this.get(type).dropCollection(collectionName(model.entity, model.modelName, version));
  }

  types(): DbTarget[] {
    return [...this.#dbs.keys()];
  }
}
