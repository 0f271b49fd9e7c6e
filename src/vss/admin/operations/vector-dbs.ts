/**
 * The vector databases the admin can reach, by the kind variants name (`vectordb_type`), and the
 * collection each model version gets on one of them: one per (model version, vector DB), shared by
 * the variants on it (vss.md), named by the shared rule (model/collection-name.ts) and created with
 * the HNSW parameters of the variants' `vectordb_config` (or the service defaults).
 */
import { isLatticeError, LatticeError } from '../../../platform/errors.js';
import type { HnswParams, VectorDb } from '../../../platform/vectordb/index.js';
import { collectionName } from '../../model/index.js';
import type { JsonObject, JsonValue, Model, Variant, VectorDbType } from '../../store/index.js';

export class VectorDbs {
  readonly #dbs: Map<VectorDbType, VectorDb>;

  /** `primary` is this process's vector DB (`vectorDbType`); `others` any further ones it may reach. */
  constructor(
    readonly primaryType: VectorDbType,
    primary: VectorDb,
    others: Partial<Record<VectorDbType, VectorDb>> = {},
  ) {
    this.#dbs = new Map(Object.entries(others) as [VectorDbType, VectorDb][]);
    this.#dbs.set(primaryType, primary);
  }

  /** The vector DB of `type`; FAILED_PRECONDITION (naming the variant) when this admin has none. */
  get(type: VectorDbType, forVariant?: string): VectorDb {
    const db = this.#dbs.get(type);
    if (db !== undefined) return db;
    const who = forVariant === undefined ? '' : `variant ${forVariant} is on `;
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${who}a ${type} vector database, and this admin is connected to ${[...this.#dbs.keys()].join(', ')} only: configure the ${type} vector database for vss admin`,
      { field: 'vectordb_type' },
    );
  }

  /** The variants grouped by the vector DB they use, each group's DB checked reachable. */
  byType(variants: readonly Variant[]): Map<VectorDbType, Variant[]> {
    const groups = new Map<VectorDbType, Variant[]>();
    for (const variant of variants) {
      this.get(variant.vectorDbType, variant.variant);
      const group = groups.get(variant.vectorDbType);
      if (group === undefined) groups.set(variant.vectorDbType, [variant]);
      else group.push(variant);
    }
    return groups;
  }

  /**
   * Creates the version's collection on `type` unless it exists (idempotent: a crash after creating
   * it runs this again). An existing one is accepted when its dimension and distance are the
   * model's, whatever its HNSW settings (the consumers may have created it first).
   */
  async ensureCollection(model: Model, version: number, type: VectorDbType, variants: readonly Variant[]) {
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
  async dropCollection(model: { entity: string; modelName: string }, version: number, type: VectorDbType) {
    return this.get(type).dropCollection(collectionName(model.entity, model.modelName, version));
  }

  types(): VectorDbType[] {
    return [...this.#dbs.keys()];
  }
}

/**
 * HNSW parameters from the variants' `vectordb_config`: `hnsw: {m, ef_construction, ef_search}` or
 * the original system's `params: {m, ef_construct}` (strings or numbers). The first variant (by name)
 * that sets a parameter decides it; unset ones take the vector DB's defaults.
 */
export function hnswOf(variants: readonly Variant[]): Partial<HnswParams> {
  const hnsw: Partial<HnswParams> = {};
  for (const variant of [...variants].sort((a, b) => (a.variant < b.variant ? -1 : 1))) {
    const config = variant.vectorDbConfig;
    const sources = [objectAt(config, 'hnsw'), objectAt(config, 'params')];
    for (const source of sources) {
      if (source === undefined) continue;
      hnsw.m ??= positive(source.m);
      hnsw.efConstruction ??= positive(
        source.ef_construction ?? source.ef_construct ?? source.efConstruction,
      );
      hnsw.efSearch ??= positive(source.ef_search ?? source.ef ?? source.efSearch);
    }
  }
  return Object.fromEntries(Object.entries(hnsw).filter(([, v]) => v !== undefined));
}

function objectAt(config: JsonObject, key: string): JsonObject | undefined {
  const value = config[key];
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

function positive(value: JsonValue | undefined): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= 10_000 ? n : undefined;
}
