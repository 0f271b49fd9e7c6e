/**
 * A VectorDb that passes every call to another one, or fails it UNAVAILABLE while `failing` is set:
 * a vector database that is down for a while, for the transient-failure tests.
 */
import { unavailable } from '../../../src/platform/errors.js';
import type {
  CollectionInfo,
  CollectionSpec,
  GetPointsOptions,
  Payload,
  PointInput,
  SearchHit,
  SearchRequest,
  StoredPoint,
  VectorDb,
} from '../../../src/platform/vectordb/index.js';

export class FlakyVectorDb implements VectorDb {
  failing = false;

  constructor(private readonly inner: VectorDb) {}

  private async call<T>(work: () => Promise<T>): Promise<T> {
    if (this.failing) throw unavailable('vector database unreachable (test)');
    return work();
  }

  createCollection(spec: CollectionSpec): Promise<void> {
    return this.call(() => this.inner.createCollection(spec));
  }
  dropCollection(name: string): Promise<boolean> {
    return this.call(() => this.inner.dropCollection(name));
  }
  listCollections(): Promise<string[]> {
    return this.call(() => this.inner.listCollections());
  }
  collectionInfo(name: string): Promise<CollectionInfo> {
    return this.call(() => this.inner.collectionInfo(name));
  }
  upsert(collection: string, points: readonly PointInput[]): Promise<void> {
    return this.call(() => this.inner.upsert(collection, points));
  }
  delete(collection: string, ids: readonly string[]): Promise<number> {
    return this.call(() => this.inner.delete(collection, ids));
  }
  setPayload(collection: string, ids: readonly string[], payload: Payload): Promise<number> {
    return this.call(() => this.inner.setPayload(collection, ids, payload));
  }
  getPoints(
    collection: string,
    ids: readonly string[],
    options?: GetPointsOptions,
  ): Promise<(StoredPoint | undefined)[]> {
    return this.call(() => this.inner.getPoints(collection, ids, options));
  }
  search(request: SearchRequest): Promise<SearchHit[][]> {
    return this.call(() => this.inner.search(request));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
