/**
 * Candidate look-up by id: the embedding store first, then the vector DB point. A query by
 * `candidate_id` reads the candidate's search embedding in the version it searches; GetEmbeddings
 * and ScoreCandidates read the model's newest served version.
 */
import { isLatticeError } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import { nextTurn, sliceOver, stopIfOver } from '../../platform/scheduling/index.js';
import type { VectorDb } from '../../platform/vectordb/index.js';
import { collectionName } from '../model/collection-name.js';
import { type ClusterVectorDbs, EXPIRES_AT_FIELD, isExpired } from '../model/index.js';
import type { Cluster, StoredEmbedding, VssStore } from '../store/index.js';
import type { ServingConfigRepository, ServingModel } from './config-repository.js';
import { storableId } from './request-validation.js';
import type { VectorDbGuard } from './vector-db-guard.js';

export interface CandidateLookupDeps {
  store: VssStore;
  config: ServingConfigRepository;
  vectorDbs: ClusterVectorDbs;
  guard: VectorDbGuard;
}

export class CandidateLookup {
  constructor(private readonly deps: CandidateLookupDeps) {}

  /**
   * The search embedding of candidate `id` in `version`; undefined when it has none there. The
   * point is read from `vectorDb`, the searched variant's cluster's.
   */
  async searchVector(
    vectorDb: VectorDb,
    model: ServingModel,
    collection: string,
    version: number,
    id: string,
    context: CallContext,
  ): Promise<Float32Array | undefined> {
    const stored = await this.deps.store.embeddings.read(model.embeddingsTable, {
      modelName: model.modelName,
      version,
      ids: [id],
    });
    const embedding = stored.get(id);
    if (embedding) return embedding.searchEmbedding;
    const expiring = model.embeddingTtlSeconds > 0;
    const [point] = await this.deps.guard.run(
      () =>
        vectorDb.getPoints(collection, [id], {
          withVector: true,
          withPayload: expiring ? [EXPIRES_AT_FIELD] : false,
        }),
      context.signal,
    );
    // An expired embedding is not served, not even as a query's starting point.
    if (expiring && isExpired(point?.payload, Date.now())) return undefined;
    return point?.vector;
  }

  /**
   * Embeddings of the model's newest served version, from the embedding store. Only a model whose
   * embedding store is off falls back to the vector DB point: with the store on, an expired row (or
   * one the sweep deleted) is not found, rather than served again from the point it left behind.
   */
  async servedEmbeddings(
    model: ServingModel,
    ids: readonly string[],
    context: CallContext,
  ): Promise<Map<string, StoredEmbedding>> {
    const version = this.deps.config.modelReadVersion(model);
    // An id no store can hold (a NUL: PostgreSQL text refuses it) is not found, without a look-up.
    const storable = ids.filter(storableId);
    if (storable.length === 0) return new Map();
    const found = await this.readInSlices(model, version, storable, context);
    const missing = model.embeddingStoreEnabled ? [] : storable.filter((id) => !found.has(id));
    if (missing.length > 0) {
      const collection = collectionName(model.entity, model.modelName, version);
      const vectorDb = this.deps.vectorDbs.of(servingCluster(model, version));
      const points = await this.deps.guard
        .run(() => vectorDb.getPoints(collection, missing, { withPayload: false }), context.signal)
        .catch((err: unknown) => {
          if (isLatticeError(err, 'NOT_FOUND')) return [];
          throw err;
        });
      for (const point of points) {
        if (point?.vector) {
          found.set(point.id, {
            id: point.id,
            embedding: point.vector,
            searchEmbedding: point.vector,
            toBeIndexed: {},
            expiresAt: null,
          });
        }
      }
    }
    return found;
  }

  /**
   * The store's rows for `ids`, a few hundred at a time with the event loop given back between
   * reads: the embedded SQL engine runs a query on the event loop, and 10,000 rows of 32-d vectors
   * take about 400 ms to read in one; stops once the call is over.
   */
  private async readInSlices(
    model: ServingModel,
    version: number,
    ids: readonly string[],
    context: CallContext,
  ): Promise<Map<string, StoredEmbedding>> {
    const perRead = Math.max(16, Math.floor(FLOATS_PER_READ / model.config.vectorDimension));
    const read = (chunk: readonly string[]) =>
      this.deps.store.embeddings.read(model.embeddingsTable, {
        modelName: model.modelName,
        version,
        ids: chunk,
      });
    if (ids.length <= perRead) return read(ids);
    const found = new Map<string, StoredEmbedding>();
    for (let from = 0; from < ids.length; from += perRead) {
      if (from > 0) {
        if (sliceOver()) await nextTurn(context.signal, context.deadline);
        else stopIfOver(context.signal, context.deadline);
      }
      for (const [id, row] of await read(ids.slice(from, from + perRead))) found.set(id, row);
    }
    return found;
  }
}

/**
 * The cluster holding the version's points: a variant's that reads it (the first by name; variants
 * reading one version on two clusters hold the same points in both), else the model's.
 */
function servingCluster(model: ServingModel, version: number): Cluster {
  for (const variant of model.variants.values()) if (variant.readVersion === version) return variant.cluster;
  return 'experiment';
}

/** Vector elements one store read returns at most (about 10 ms of an embedded read). */
const FLOATS_PER_READ = 8192;
