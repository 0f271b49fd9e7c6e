/**
 * The `VectorDb` port over a Qdrant server, through its REST client. Each port collection is one
 * Qdrant collection (`collectionPrefix` + name) with one unnamed vector; what Qdrant does differently
 * is translated here so the adapter keeps every guarantee of vector-db.ts:
 *
 * - **Ids.** String ids become name-based UUIDs; the original id is kept in a reserved payload field
 *   (point-ids.ts) that callers cannot write or see.
 * - **Filters** keep the port's semantics (qdrant-filters.ts).
 * - **Ties** are ordered by id (ranking.ts); **exactly `limit`**: a filtered query that comes back
 *   short is asked again with `exact: true`, so it is short only when fewer points match.
 * - **`efSearch`** is not a Qdrant collection setting: it is kept in the collection's metadata
 *   (Qdrant 1.16 or later) and sent as `hnsw_ef`, raised to the depth of the page.
 * - **Writes** wait for Qdrant to apply them (`wait=true`), so the next read sees them.
 * - **Indexing.** Qdrant searches small segments exactly and indexes large ones in the background;
 *   a `green` collection reports every point as indexed, `yellow`/`grey` report Qdrant's indexed
 *   vector count as INDEXING, `red` is FAILED.
 *
 * Not kept: COSINE collections return vectors normalised to unit length (Qdrant normalises on
 * write), where the embedded engine returns them as written; scores are unaffected. `delete` and
 * `setPayload` count the points that existed just before the write, so a concurrent writer can make
 * the count stale.
 */
import { QdrantClient, type Schemas } from '@qdrant/js-client-rest';
import { invalidArgument, isLatticeError, LatticeError } from '../../errors.js';
import { compileFilters } from '../filters.js';
import { cutPage, firstWindow, widerWindow } from '../ranking.js';
import type { ValidatedSpec } from '../validation.js';
import * as validation from '../validation.js';
import {
  type CollectionInfo,
  type CollectionSpec,
  type CollectionStatus,
  type DistanceFunction,
  type GetPointsOptions,
  HNSW_DEFAULTS,
  type Payload,
  type PayloadValue,
  type PointInput,
  type SearchHit,
  type SearchRequest,
  type StoredPoint,
  type VectorDb,
} from '../vector-db.js';
import { assertNoReservedField, ID_FIELD, pointUuid, storedPayload } from './point-ids.js';
import { messageOf, statusOf, toLatticeError } from './qdrant-errors.js';
import { addFilters, finishFilter, payloadKey, type QdrantFilter } from './qdrant-filters.js';

export interface QdrantVectorDbOptions {
  /** REST endpoint, e.g. `http://qdrant:6333` (without a port the client uses 6333). */
  url: string;
  apiKey?: string;
  /** Per-request timeout; default 5,000 ms. */
  timeoutMs?: number;
  /** Prepended to every collection name in Qdrant, so several deployments can share a server. */
  collectionPrefix?: string;
}

/** Collection metadata key of the search-time `ef`. */
const EF_SEARCH_KEY = 'lattice_ef_search';

const TO_QDRANT: Record<DistanceFunction, Schemas['Distance']> = {
  DOT: 'Dot',
  COSINE: 'Cosine',
  EUCLIDEAN: 'Euclid',
};
const FROM_QDRANT: Partial<Record<string, DistanceFunction>> = {
  Dot: 'DOT',
  Cosine: 'COSINE',
  Euclid: 'EUCLIDEAN',
};

/** Vector values per upsert request (about 10 MB of JSON). */
const VALUES_PER_UPSERT = 500_000;
const MAX_POINTS_PER_UPSERT = 1000;

interface PreparedQuery {
  vector: number[];
  filter: QdrantFilter | undefined;
}

function plainValue(value: unknown): PayloadValue {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'bigint' ? Number(v) : v)) as string[];
  return value as PayloadValue;
}

/** A stored Qdrant payload as the original id and the caller's fields. */
function readPayload(raw: unknown): { id: string | undefined; payload: Payload } {
  const payload: Payload = {};
  let id: string | undefined;
  if (typeof raw === 'object' && raw !== null) {
    for (const [key, value] of Object.entries(raw)) {
      if (key === ID_FIELD) id = typeof value === 'string' ? value : undefined;
      else payload[key] = plainValue(value);
    }
  }
  return { id, payload };
}

function readVector(raw: unknown): Float32Array | undefined {
  return Array.isArray(raw) ? Float32Array.from(raw as number[]) : undefined;
}

/** The `with_payload` that returns the fields asked for (and the id field when `withId`). */
function payloadSelector(
  fields: boolean | readonly string[] | undefined,
  withId: boolean,
): Schemas['WithPayloadInterface'] {
  if (fields === true) return true;
  const wanted = fields === undefined || fields === false ? [] : fields.filter((f) => f !== ID_FIELD);
  const keys = wanted.map(payloadKey);
  // A name Qdrant's path syntax cannot express: fetch the whole payload and pick here.
  if (keys.some((key) => key === undefined)) return true;
  const all = [...new Set(keys as string[]), ...(withId ? [ID_FIELD] : [])];
  return all.length > 0 ? all : false;
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

export class QdrantVectorDb implements VectorDb {
  /** The URL as configured, named in every connection error. */
  readonly url: string;
  private readonly client: QdrantClient;
  private readonly timeoutMs: number;
  private readonly prefix: string;
  /** Collection specs seen, so writes and searches validate without a round trip. */
  private readonly specs = new Map<string, ValidatedSpec>();
  private closed = false;

  constructor(options: QdrantVectorDbOptions) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(options.url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw invalidArgument(`url must be an http(s) URL, got ${JSON.stringify(options.url)}`, 'url');
    }
    const timeoutMs = options.timeoutMs ?? 5000;
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw invalidArgument(`timeoutMs must be a positive integer, got ${String(timeoutMs)}`, 'timeoutMs');
    }
    const prefix = options.collectionPrefix ?? '';
    if (!/^[A-Za-z0-9_.-]*$/.test(prefix)) {
      throw invalidArgument(
        'collectionPrefix may hold letters, digits, "_", "-" and "." only',
        'collectionPrefix',
      );
    }
    this.url = options.url;
    this.timeoutMs = timeoutMs;
    this.prefix = prefix;
    const path = parsed.pathname.replace(/\/+$/, '');
    this.client = new QdrantClient({
      url: parsed.origin,
      ...(path ? { prefix: path } : {}),
      apiKey: options.apiKey,
      timeout: timeoutMs,
      checkCompatibility: false,
    });
  }

  /** Connects (lists the collections once), so an unreachable server fails here, naming the URL. */
  static async open(options: QdrantVectorDbOptions): Promise<QdrantVectorDb> {
    const db = new QdrantVectorDb(options);
    await db.listCollections();
    return db;
  }

  async createCollection(spec: CollectionSpec): Promise<void> {
    this.assertOpen();
    const wanted = validation.validateCollectionSpec(spec);
    const existing = await this.findSpec(wanted.name);
    if (existing) {
      if (validation.sameSpec(existing, wanted)) return;
      throw validation.collectionConflict(wanted.name, existing, wanted);
    }
    try {
      await this.call(() =>
        this.client.api().createCollection({
          collection_name: this.qdrantName(wanted.name),
          vectors: { size: wanted.dimension, distance: TO_QDRANT[wanted.distance] },
          hnsw_config: { m: wanted.hnsw.m, ef_construct: wanted.hnsw.efConstruction },
          metadata: { [EF_SEARCH_KEY]: wanted.hnsw.efSearch },
        }),
      );
    } catch (err) {
      // Another creator won the race: judge its collection like any existing one.
      if (isLatticeError(err, 'ALREADY_EXISTS') || isLatticeError(err, 'INVALID_ARGUMENT')) {
        const now = await this.findSpec(wanted.name);
        if (now && validation.sameSpec(now, wanted)) return;
        if (now) throw validation.collectionConflict(wanted.name, now, wanted);
      }
      throw err;
    }
    this.specs.set(wanted.name, wanted);
  }

  async dropCollection(name: string): Promise<boolean> {
    this.assertOpen();
    validation.validateCollectionName(name);
    const dropped = await this.call(() => this.client.deleteCollection(this.qdrantName(name)));
    this.specs.delete(name);
    return dropped === true;
  }

  async listCollections(): Promise<string[]> {
    this.assertOpen();
    const { collections } = await this.call(() => this.client.getCollections());
    return collections
      .map((c) => c.name)
      .filter((n) => n.startsWith(this.prefix) && n.length > this.prefix.length)
      .map((n) => n.slice(this.prefix.length))
      .sort();
  }

  async collectionInfo(name: string): Promise<CollectionInfo> {
    this.assertOpen();
    validation.validateCollectionName(name, 'collection');
    const info = await this.call(() => this.client.getCollection(this.qdrantName(name)), name);
    const spec = this.specOf(name, info);
    const points = info.points_count ?? 0;
    const status: CollectionStatus =
      info.status === 'green' ? 'READY' : info.status === 'red' ? 'FAILED' : 'INDEXING';
    return {
      name,
      dimension: spec.dimension,
      distance: spec.distance,
      hnsw: { ...spec.hnsw },
      points,
      indexedPoints: status === 'READY' ? points : Math.min(points, info.indexed_vectors_count ?? 0),
      status,
    };
  }

  async upsert(name: string, points: readonly PointInput[]): Promise<void> {
    const spec = await this.spec(name);
    const valid = validation.validatePoints(points, spec.dimension, name);
    points.forEach((point, i) => {
      if (point.payload) assertNoReservedField(point.payload, `points[${i}].payload`);
    });
    const size = Math.max(1, Math.min(MAX_POINTS_PER_UPSERT, Math.floor(VALUES_PER_UPSERT / spec.dimension)));
    for (const part of chunk(valid, size)) {
      await this.call(
        () =>
          this.client.upsert(this.qdrantName(name), {
            wait: true,
            points: part.map((p) => ({
              id: pointUuid(p.id),
              vector: Array.from(p.vector),
              payload: storedPayload(p.id, p.payload),
            })),
          }),
        name,
      );
    }
  }

  async delete(name: string, ids: readonly string[]): Promise<number> {
    await this.spec(name);
    validation.validateIds(ids);
    const existing = await this.existing(name, ids);
    if (existing.length === 0) return 0;
    await this.call(() => this.client.delete(this.qdrantName(name), { wait: true, points: existing }), name);
    return existing.length;
  }

  async setPayload(name: string, ids: readonly string[], payload: Payload): Promise<number> {
    await this.spec(name);
    validation.validateIds(ids);
    const fields = validation.validatePayload(payload, 'payload');
    assertNoReservedField(fields, 'payload');
    for (let attempt = 0; ; attempt++) {
      const existing = await this.existing(name, ids);
      if (existing.length === 0) return 0;
      try {
        await this.call(
          () =>
            this.client.setPayload(this.qdrantName(name), { wait: true, payload: fields, points: existing }),
          name,
        );
        return existing.length;
      } catch (err) {
        // A point deleted since it was counted: Qdrant refuses the whole call; count again.
        if (attempt === 0 && isLatticeError(err, 'NOT_FOUND') && err.field !== 'collection') continue;
        throw err;
      }
    }
  }

  async getPoints(
    name: string,
    ids: readonly string[],
    options: GetPointsOptions = {},
  ): Promise<(StoredPoint | undefined)[]> {
    await this.spec(name);
    validation.validateIds(ids);
    const withVector = options.withVector ?? true;
    const withPayload = options.withPayload ?? true;
    const records = await this.call(
      () =>
        this.client.retrieve(this.qdrantName(name), {
          ids: [...new Set(ids)].map(pointUuid),
          with_payload: payloadSelector(withPayload, false),
          with_vector: withVector,
        }),
      name,
    );
    const byUuid = new Map(records.map((r) => [String(r.id).toLowerCase(), r]));
    return ids.map((id) => {
      const record = byUuid.get(pointUuid(id));
      if (!record) return undefined;
      const point: StoredPoint = { id };
      if (withVector) {
        const vector = readVector(record.vector);
        if (vector) point.vector = vector;
      }
      const payload = validation.selectPayload(readPayload(record.payload).payload, withPayload);
      if (payload) point.payload = payload;
      return point;
    });
  }

  async search(request: SearchRequest): Promise<SearchHit[][]> {
    this.assertOpen();
    validation.validateSearchShape(request);
    const name = request.collection;
    const spec = await this.spec(name);
    const shared: Required<QdrantFilter> = { must: [], must_not: [] };
    addFilters(shared, compileFilters(request.filters, 'filters'), 'filters');
    const queries: PreparedQuery[] = request.queries.map((query, i) => {
      const vector = validation.validateVector(
        query.vector,
        spec.dimension,
        `queries[${i}].vector`,
        name,
        false,
      );
      const filter: Required<QdrantFilter> = { must: [...shared.must], must_not: [...shared.must_not] };
      addFilters(filter, compileFilters(query.filters, `queries[${i}].filters`), `queries[${i}].filters`);
      if (query.excludeIds && query.excludeIds.length > 0) {
        filter.must_not.push({ has_id: [...new Set(query.excludeIds)].map(pointUuid) });
      }
      return { vector: Array.from(vector), filter: finishFilter(filter) };
    });
    if (queries.length === 0) return [];

    const { limit } = request;
    // `exact`: every fetch is exact (params.exact), the port's ground-truth search.
    const exactOnly = request.exact ?? false;
    const body = (query: PreparedQuery, window: number, exact: boolean): Schemas['SearchRequest'] => ({
      vector: query.vector,
      ...(query.filter ? { filter: query.filter } : {}),
      limit: window,
      with_payload: payloadSelector(request.withPayload, true),
      with_vector: request.withVector ?? false,
      params: {
        hnsw_ef: Math.max(request.efSearch ?? spec.hnsw.efSearch, window),
        indexed_only: request.indexedOnly ?? false,
        exact,
      },
    });
    const decode = (points: Schemas['ScoredPoint'][]): SearchHit[] =>
      points.map((point) => {
        const stored = readPayload(point.payload);
        const hit: SearchHit = { id: stored.id ?? String(point.id), score: point.score };
        const payload = validation.selectPayload(stored.payload, request.withPayload);
        if (payload) hit.payload = payload;
        if (request.withVector) {
          const vector = readVector(point.vector);
          if (vector) hit.vector = vector;
        }
        return hit;
      });
    const fetch = async (query: PreparedQuery, window: number, exact: boolean) =>
      decode(
        await this.call(() => this.client.search(this.qdrantName(name), body(query, window, exact)), name),
      );
    /** Widens the fetch until the answer can be cut from it without splitting a tie. */
    const settle = async (query: PreparedQuery, first: SearchHit[], exact: boolean) => {
      let window = firstWindow(limit);
      let hits = first;
      for (;;) {
        const wider = widerWindow(hits, window, limit);
        if (!wider) return cutPage(hits, limit, spec.distance);
        window = wider;
        hits = await fetch(query, window, exact);
      }
    };

    const firstAnswers = await this.call(
      () =>
        this.client.searchBatch(this.qdrantName(name), {
          searches: queries.map((query) => body(query, firstWindow(limit), exactOnly)),
        }),
      name,
    );
    const results: SearchHit[][] = [];
    for (let i = 0; i < queries.length; i++) {
      const query = queries[i]!;
      let page = await settle(query, decode(firstAnswers[i] ?? []), exactOnly);
      // HNSW under a filter can miss matches; an exact search tells a short page from a true one.
      if (!exactOnly && page.length < limit && query.filter) {
        page = await settle(query, await fetch(query, firstWindow(limit), true), true);
      }
      results.push(page);
    }
    return results;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.specs.clear();
  }

  private qdrantName(name: string): string {
    return this.prefix + name;
  }

  private assertOpen(): void {
    if (this.closed) throw new LatticeError('UNAVAILABLE', `Qdrant vector database at ${this.url} is closed`);
  }

  /** Runs one client call, mapping its failures; `collection` turns a missing collection into NOT_FOUND. */
  private async call<T>(work: () => Promise<T>, collection?: string): Promise<T> {
    this.assertOpen();
    try {
      return await work();
    } catch (err) {
      const status = statusOf(err);
      if (collection !== undefined && status === 404 && /collection/i.test(messageOf(err))) {
        this.specs.delete(collection);
        throw validation.collectionNotFound(collection);
      }
      // A stale spec (the collection was recreated elsewhere) would fail every later request.
      if (collection !== undefined && status === 400) this.specs.delete(collection);
      throw toLatticeError(err, this.url, this.timeoutMs);
    }
  }

  /** The spec of a collection: cached, or read from Qdrant; NOT_FOUND when there is none. */
  private async spec(name: string): Promise<ValidatedSpec> {
    this.assertOpen();
    validation.validateCollectionName(name, 'collection');
    const cached = this.specs.get(name);
    if (cached) return cached;
    const info = await this.call(() => this.client.getCollection(this.qdrantName(name)), name);
    return this.specOf(name, info);
  }

  private async findSpec(name: string): Promise<ValidatedSpec | undefined> {
    try {
      const info = await this.call(() => this.client.getCollection(this.qdrantName(name)), name);
      return this.specOf(name, info);
    } catch (err) {
      if (isLatticeError(err, 'NOT_FOUND')) return undefined;
      throw err;
    }
  }

  /** Reads a collection's spec from its Qdrant info (and caches it). */
  private specOf(name: string, info: Schemas['CollectionInfo']): ValidatedSpec {
    const vectors = info.config.params.vectors as Partial<Schemas['VectorParams']> | undefined;
    const distance = FROM_QDRANT[String(vectors?.distance)];
    if (typeof vectors?.size !== 'number' || !distance) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `Qdrant collection "${this.qdrantName(name)}" is not a Lattice collection (it needs one unnamed Dot, Cosine or Euclid vector)`,
        { field: 'collection' },
      );
    }
    const metadata = (info.config.metadata ?? {}) as Record<string, unknown>;
    const efSearch = metadata[EF_SEARCH_KEY];
    const spec: ValidatedSpec = {
      name,
      dimension: vectors.size,
      distance,
      hnsw: {
        m: info.config.hnsw_config.m,
        efConstruction: info.config.hnsw_config.ef_construct,
        efSearch: typeof efSearch === 'number' ? efSearch : HNSW_DEFAULTS.efSearch,
      },
    };
    this.specs.set(name, spec);
    return spec;
  }

  /** The UUIDs of those of `ids` that exist. */
  private async existing(name: string, ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const records = await this.call(
      () =>
        this.client.retrieve(this.qdrantName(name), {
          ids: [...new Set(ids)].map(pointUuid),
          with_payload: false,
          with_vector: false,
        }),
      name,
    );
    return records.map((r) => String(r.id).toLowerCase());
  }
}
