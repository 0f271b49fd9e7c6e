/**
 * Makes sure a model version's collection exists before points are written to it. The admin
 * normally creates it (with the variant's HNSW settings) when a reset starts; creating it here too
 * means a delta or a re-run never fails on a missing collection. Known collections are remembered,
 * so this costs one call per collection per process.
 */
import { isLatticeError } from '../../platform/errors.js';
import type { DistanceFunction, VectorDb } from '../../platform/vectordb/index.js';

export interface CollectionShape {
  name: string;
  dimension: number;
  distance: DistanceFunction;
}

export class CollectionProvisioner {
  readonly #ready = new Set<string>();

  constructor(private readonly vectorDb: VectorDb) {}

  /**
   * Creates the collection if missing. Resolves to undefined when it exists with the model's
   * dimension and distance (whatever its HNSW settings), else to why it cannot take the points.
   * Throws when the vector DB fails (transient).
   */
  async ensure(shape: CollectionShape): Promise<string | undefined> {
    if (this.#ready.has(shape.name)) return undefined;
    try {
      await this.vectorDb.createCollection({
        name: shape.name,
        dimension: shape.dimension,
        distance: shape.distance,
      });
    } catch (err) {
      // Created before with other HNSW settings (the admin's): fine if the shape is the model's.
      if (!isLatticeError(err, 'ALREADY_EXISTS')) throw err;
      const info = await this.vectorDb.collectionInfo(shape.name);
      if (info.dimension !== shape.dimension || info.distance !== shape.distance) {
        return `collection ${shape.name} exists with dimension ${info.dimension} and distance ${info.distance}, but the model has dimension ${shape.dimension} and distance ${shape.distance}`;
      }
    }
    this.#ready.add(shape.name);
    return undefined;
  }

  /** Forgets a collection (it was dropped): the next write checks again. */
  forget(name: string): void {
    this.#ready.delete(name);
  }
}
