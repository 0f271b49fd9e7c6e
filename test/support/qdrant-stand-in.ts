/**
 * An in-process stand-in for the subset of Qdrant's REST API the Qdrant adapter uses, so the VectorDb
 * contract runs against the adapter where no Qdrant server can (this machine, CI). It follows
 * Qdrant's documented behaviour, not the adapter's needs:
 *
 * - point ids are unsigned integers or UUIDs (any other id is a 400 "Format error in JSON body");
 *   UUIDs answer in lower-case hyphenated form;
 * - Cosine collections store vectors normalised to unit length (and return them so); Euclid scores
 *   are distances, ascending; Dot and Cosine scores descend; scores are f32;
 * - equal scores come in the engine's internal order (here: by stored UUID), not by any caller id;
 * - filters: `must` / `should` / `min_should` / `must_not`, nested clauses, `match.value` (keyword,
 *   integer, bool — typed: a keyword never equals a number), `match.any` / `match.except` (keywords
 *   or integers), `match.text`, `range` (numbers only), `values_count`, `is_empty` (missing, null or
 *   `[]`), `is_null`, `has_id`; a condition on an array field holds when any element matches;
 * - keys are JSON paths: `a.b`, `"a.b"` (quoted, one key), `a[0]`, `a[]`;
 * - errors are `{ status: { error } }` with Qdrant's statuses: 404 for an unknown collection or point,
 *   409 for an existing collection, 400 for bad input, 422 for a failed validation, 401 without the
 *   api key when one is set.
 *
 * Search is exact (brute force) whatever `params` say; `indexed_vectors_count` is 0, as Qdrant reports
 * for collections small enough to be searched without an HNSW index. `faults` simulates what an
 * approximate engine may do, for adapter tests only.
 *
 * `holdIndexing` plays a collection whose optimizer has not indexed its newest segment yet: points
 * written while it is held (new ones, and existing ones rewritten: Qdrant moves an updated point to
 * the appendable segment) are stored and found by ordinary searches, but a search with
 * `params.indexed_only` leaves them out (Qdrant skips unindexed segments above the indexing
 * threshold), and collection info says `yellow` with `indexed_vectors_count` below `points_count`.
 * Releasing the hold indexes them, as the optimizer would.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
type PointId = number | string;

interface StoredPoint {
  id: PointId;
  vector: Float32Array;
  payload: JsonObject;
  version: number;
}

interface Collection {
  size: number;
  distance: 'Dot' | 'Cosine' | 'Euclid' | 'Manhattan';
  hnsw: { m: number; ef_construct: number; full_scan_threshold: number };
  metadata: JsonObject | null;
  points: Map<string, StoredPoint>;
  status: { status: 'green' | 'yellow' | 'grey' | 'red'; indexed_vectors_count: number } | undefined;
  /** Indexing is held back (see `holdIndexing`). */
  held: boolean;
  /** Keys of the points written while indexing was held: not yet indexed. */
  unindexed: Set<string>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Json | undefined;
}

export interface QdrantStandIn {
  url: string;
  /** Every request served, oldest first. */
  readonly requests: RecordedRequest[];
  readonly faults: {
    /** Non-exact searches with a filter drop every other match, as HNSW under a filter may. */
    lossyFilteredSearch: boolean;
  };
  /** Overrides what collection info reports, as while Qdrant optimises (`yellow`) or failed (`red`). */
  setStatus(
    collection: string,
    status: 'green' | 'yellow' | 'grey' | 'red',
    indexedVectorsCount?: number,
  ): void;
  /**
   * Keeps points written to `collection` from now on out of the index (out of `indexed_only`
   * searches and `indexed_vectors_count`) until the returned function is called.
   */
  holdIndexing(collection: string): () => void;
  /** The ids and payloads stored in a collection, as Qdrant holds them. */
  stored(collection: string): { id: PointId; payload: JsonObject }[];
  stop(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const badFormat = (what: string) => new HttpError(400, `Format error in JSON body: ${what}`);
const invalid = (what: string) => new HttpError(422, `Validation error in JSON body: [${what}]`);

const UUID_FORMS = [
  /^([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})$/i,
  /^\{([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})\}$/i,
  /^urn:uuid:([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i,
];

/** A point id's storage key and its answer form; a 400 for anything but a uint or a UUID. */
function parseId(value: Json | undefined): { key: string; id: PointId } {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
    return { key: `n:${value}`, id: value };
  }
  if (typeof value === 'string') {
    for (const form of UUID_FORMS) {
      const m = form.exec(value);
      if (m) {
        const id = m.slice(1, 6).join('-').toLowerCase();
        return { key: `u:${id}`, id };
      }
    }
  }
  throw badFormat(
    `value ${JSON.stringify(value)} is not a valid point ID, valid values are either an unsigned integer or a UUID`,
  );
}

// ---------------------------------------------------------------------------------------------------
// JSON paths and conditions

type PathItem = { key: string } | { index: number } | { wildcard: true };

function parsePath(text: string): PathItem[] {
  const items: PathItem[] = [];
  let at = 0;
  const readKey = () => {
    if (text[at] === '"') {
      const close = text.indexOf('"', at + 1);
      const key = close < 0 ? '' : text.slice(at + 1, close);
      if (close < 0 || key.includes('\\')) throw badFormat(`invalid payload key ${JSON.stringify(text)}`);
      at = close + 1;
      return key;
    }
    const m = /^[\p{L}\p{N}_-]+/u.exec(text.slice(at));
    if (!m) throw badFormat(`invalid payload key ${JSON.stringify(text)}`);
    at += m[0].length;
    return m[0];
  };
  items.push({ key: readKey() });
  while (at < text.length) {
    if (text.startsWith('[]', at)) {
      items.push({ wildcard: true });
      at += 2;
    } else if (text[at] === '[') {
      const m = /^\[(\d+)\]/.exec(text.slice(at));
      if (!m) throw badFormat(`invalid payload key ${JSON.stringify(text)}`);
      items.push({ index: Number(m[1]) });
      at += m[0].length;
    } else if (text[at] === '.') {
      at++;
      items.push({ key: readKey() });
    } else {
      throw badFormat(`invalid payload key ${JSON.stringify(text)}`);
    }
  }
  return items;
}

/** The values a path reaches (a terminal array is one value). */
function valuesAt(payload: JsonObject, path: PathItem[]): Json[] {
  let current: Json[] = [payload];
  for (const item of path) {
    const next: Json[] = [];
    for (const value of current) {
      if ('key' in item) {
        if (
          value !== null &&
          typeof value === 'object' &&
          !Array.isArray(value) &&
          Object.hasOwn(value, item.key)
        ) {
          next.push(value[item.key]!);
        }
      } else if ('index' in item) {
        if (Array.isArray(value) && item.index < value.length) next.push(value[item.index]!);
      } else if (Array.isArray(value)) {
        next.push(...value);
      }
    }
    current = next;
  }
  return current;
}

function asList(value: Json | undefined): Json[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function isInteger(value: Json): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

/** Qdrant's `match` on one stored scalar. */
function matchOne(stored: Json, match: JsonObject): boolean {
  if ('value' in match) {
    const want = match.value;
    if (typeof want === 'boolean') return stored === want;
    if (typeof want === 'string') return stored === want;
    return isInteger(stored) && stored === want;
  }
  if ('any' in match || 'except' in match) {
    const list = (match.any ?? match.except) as Json[];
    const keywords = list.length === 0 || typeof list[0] === 'string';
    const contained =
      (keywords && typeof stored === 'string' && list.includes(stored)) ||
      (!keywords && isInteger(stored) && list.includes(stored));
    if ('any' in match) return contained;
    if (stored === null) return false;
    if (typeof stored === 'string') return keywords ? !contained : true;
    if (typeof stored === 'number') return keywords ? true : !isInteger(stored) || !contained;
    return true;
  }
  if ('text' in match) return typeof stored === 'string' && stored.includes(String(match.text));
  throw badFormat(`unknown match ${JSON.stringify(match)}`);
}

function rangeHolds(stored: Json, range: JsonObject): boolean {
  if (typeof stored !== 'number') return false;
  const { lt, lte, gt, gte } = range as Record<string, number | null | undefined>;
  return (
    (lt == null || stored < lt) &&
    (lte == null || stored <= lte) &&
    (gt == null || stored > gt) &&
    (gte == null || stored >= gte)
  );
}

function countHolds(count: number, range: JsonObject): boolean {
  const { lt, lte, gt, gte } = range as Record<string, number | null | undefined>;
  return (
    (lt == null || count < lt) &&
    (lte == null || count <= lte) &&
    (gt == null || count > gt) &&
    (gte == null || count >= gte)
  );
}

function isEmpty(payload: JsonObject, key: string): boolean {
  return valuesAt(payload, parsePath(key)).every((v) => v === null || (Array.isArray(v) && v.length === 0));
}

function clauseList(value: Json | undefined): JsonObject[] {
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]) as JsonObject[];
}

function conditionHolds(point: StoredPoint, key: string, condition: JsonObject): boolean {
  if ('has_id' in condition) return asList(condition.has_id).some((id) => parseId(id).key === key);
  if ('is_empty' in condition) return isEmpty(point.payload, String((condition.is_empty as JsonObject).key));
  if ('is_null' in condition) {
    const values = valuesAt(point.payload, parsePath(String((condition.is_null as JsonObject).key)));
    return values.some((v) => v === null);
  }
  if ('must' in condition || 'should' in condition || 'must_not' in condition || 'min_should' in condition) {
    return filterHolds(point, key, condition);
  }
  if ('nested' in condition) throw badFormat('nested conditions are not supported by the stand-in');
  if (typeof condition.key !== 'string') throw badFormat(`unknown condition ${JSON.stringify(condition)}`);
  const values = valuesAt(point.payload, parsePath(condition.key));
  if (condition.is_empty === true) return isEmpty(point.payload, condition.key);
  if (condition.values_count) {
    const count = values.reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 1), 0);
    return countHolds(count, condition.values_count as JsonObject);
  }
  const scalars = values.flatMap((v) => (Array.isArray(v) ? v : [v]));
  const match = condition.match as JsonObject | null | undefined;
  const range = condition.range as JsonObject | null | undefined;
  return scalars.some((s) => (match ? matchOne(s, match) : false) || (range ? rangeHolds(s, range) : false));
}

function filterHolds(point: StoredPoint, key: string, filter: JsonObject): boolean {
  const must = clauseList(filter.must);
  const should = clauseList(filter.should);
  const mustNot = clauseList(filter.must_not);
  if (!must.every((c) => conditionHolds(point, key, c))) return false;
  if (should.length > 0 && !should.some((c) => conditionHolds(point, key, c))) return false;
  if (mustNot.some((c) => conditionHolds(point, key, c))) return false;
  const minShould = filter.min_should as JsonObject | null | undefined;
  if (minShould) {
    const held = clauseList(minShould.conditions).filter((c) => conditionHolds(point, key, c)).length;
    if (held < Number(minShould.min_count)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Vectors and scores

function normalised(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const v of vector) sum += v * v;
  const length = Math.fround(Math.sqrt(sum));
  if (length < 1.1920929e-7) return vector;
  return vector.map((v) => v / length);
}

function readVector(value: Json | undefined, collection: Collection): Float32Array {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'number')) {
    throw badFormat('the stand-in takes one unnamed dense vector per point');
  }
  if (value.length !== collection.size) {
    throw new HttpError(
      400,
      `Wrong input: Vector dimension error: expected dim: ${collection.size}, got ${value.length}`,
    );
  }
  const vector = Float32Array.from(value as number[]);
  return collection.distance === 'Cosine' ? normalised(vector) : vector;
}

function score(collection: Collection, stored: Float32Array, query: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < query.length; i++) {
    const a = stored[i]!;
    const b = query[i]!;
    if (collection.distance === 'Euclid') sum += (a - b) * (a - b);
    else if (collection.distance === 'Manhattan') sum += Math.abs(a - b);
    else sum += a * b;
  }
  return Math.fround(collection.distance === 'Euclid' ? Math.sqrt(sum) : sum);
}

const ascending = (collection: Collection) =>
  collection.distance === 'Euclid' || collection.distance === 'Manhattan';

function selectPayload(
  payload: JsonObject,
  selector: Json | undefined,
  byDefault: boolean,
): JsonObject | null {
  // Selection by top-level key: a nested path (`a.b`) selects all of `a` here.
  const pick = (keys: Json[], keep: boolean) => {
    const names = new Set(keys.map((k) => (parsePath(String(k))[0] as { key: string }).key));
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(payload)) if (names.has(k) === keep) out[k] = v;
    return out;
  };
  if (selector === undefined || selector === null) return byDefault ? { ...payload } : null;
  if (selector === true) return { ...payload };
  if (selector === false) return null;
  if (Array.isArray(selector)) return pick(selector, true);
  if (typeof selector === 'object' && Array.isArray(selector.include)) return pick(selector.include, true);
  if (typeof selector === 'object' && Array.isArray(selector.exclude)) return pick(selector.exclude, false);
  throw badFormat(`invalid with_payload ${JSON.stringify(selector)}`);
}

function wantsVector(selector: Json | undefined, byDefault: boolean): boolean {
  if (selector === undefined || selector === null) return byDefault;
  if (typeof selector === 'boolean') return selector;
  if (Array.isArray(selector)) return selector.includes('');
  throw badFormat(`invalid with_vector ${JSON.stringify(selector)}`);
}

// ---------------------------------------------------------------------------------------------------
// The server

const INVALID_NAME_CHARS = ['<', '>', ':', '"', '/', '\\', '|', '?', '*', '\0', '\u001f'];
const DISTANCES = new Set(['Dot', 'Cosine', 'Euclid', 'Manhattan']);

export async function startQdrantStandIn(options: { apiKey?: string } = {}): Promise<QdrantStandIn> {
  const collections = new Map<string, Collection>();
  const requests: RecordedRequest[] = [];
  const faults = { lossyFilteredSearch: false };
  let operation = 0;

  const collectionOf = (name: string): Collection => {
    const collection = collections.get(name);
    if (!collection) throw new HttpError(404, `Not found: Collection \`${name}\` doesn't exist!`);
    return collection;
  };

  const updateResult = (query: URLSearchParams) => ({
    operation_id: ++operation,
    status: query.get('wait') === 'true' ? 'completed' : 'acknowledged',
  });

  const createCollection = (name: string, body: JsonObject) => {
    const bad = INVALID_NAME_CHARS.find((c) => name.includes(c));
    if (name.length === 0 || name.length > 255 || bad !== undefined) {
      throw invalid(`collection_name: must be 1 to 255 characters without ${JSON.stringify(bad)}`);
    }
    const vectors = body.vectors as JsonObject | undefined;
    if (!vectors || typeof vectors.size !== 'number' || typeof vectors.distance !== 'string') {
      throw badFormat('the stand-in takes one unnamed vector: {"vectors": {"size", "distance"}}');
    }
    if (!Number.isInteger(vectors.size) || vectors.size < 1 || vectors.size > 65536) {
      throw invalid(`vectors.size: value ${vectors.size} invalid, must be from 1 to 65536`);
    }
    if (!DISTANCES.has(vectors.distance)) {
      throw badFormat(
        `unknown variant \`${vectors.distance}\`, expected one of Cosine, Euclid, Dot, Manhattan`,
      );
    }
    const hnsw = (body.hnsw_config ?? {}) as JsonObject;
    const efConstruct = (hnsw.ef_construct as number | undefined) ?? 100;
    if (efConstruct < 4)
      throw invalid(`hnsw_config.ef_construct: value ${efConstruct} invalid, must be 4 or larger`);
    if (collections.has(name)) throw new HttpError(409, `Collection \`${name}\` already exists!`);
    collections.set(name, {
      size: vectors.size,
      distance: vectors.distance as Collection['distance'],
      hnsw: {
        m: (hnsw.m as number | undefined) ?? 16,
        ef_construct: efConstruct,
        full_scan_threshold: 10000,
      },
      metadata: (body.metadata as JsonObject | undefined) ?? null,
      points: new Map(),
      status: undefined,
      held: false,
      unindexed: new Set(),
    });
    return true;
  };

  /** What info reports: an override (`setStatus`), else `yellow` while points wait to be indexed. */
  const statusOf = (collection: Collection) => {
    if (collection.status) return collection.status;
    if (collection.unindexed.size > 0) {
      return {
        status: 'yellow' as const,
        indexed_vectors_count: collection.points.size - collection.unindexed.size,
      };
    }
    return { status: 'green' as const, indexed_vectors_count: 0 };
  };

  const collectionInfo = (collection: Collection) => ({
    status: statusOf(collection).status,
    optimizer_status: 'ok',
    indexed_vectors_count: statusOf(collection).indexed_vectors_count,
    points_count: collection.points.size,
    segments_count: 1,
    config: {
      params: {
        vectors: { size: collection.size, distance: collection.distance },
        shard_number: 1,
        replication_factor: 1,
        write_consistency_factor: 1,
        on_disk_payload: true,
      },
      hnsw_config: { ...collection.hnsw, max_indexing_threads: 0, on_disk: false },
      optimizer_config: { default_segment_number: 0, indexing_threshold: 10000, flush_interval_sec: 5 },
      wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
      quantization_config: null,
      ...(collection.metadata ? { metadata: collection.metadata } : {}),
    },
    payload_schema: {},
  });

  const retrieve = (collection: Collection, body: JsonObject) => {
    const seen = new Set<string>();
    const records = [];
    for (const raw of asList(body.ids)) {
      const { key } = parseId(raw);
      const point = collection.points.get(key);
      if (!point || seen.has(key)) continue;
      seen.add(key);
      records.push({
        id: point.id,
        payload: selectPayload(point.payload, body.with_payload, true),
        vector: wantsVector(body.with_vector, false) ? Array.from(point.vector) : null,
      });
    }
    return records;
  };

  const upsert = (collection: Collection, body: JsonObject) => {
    if (!Array.isArray(body.points))
      throw badFormat('the stand-in takes {"points": [...]} (not the batch form)');
    const parsed = body.points.map((raw) => {
      const point = raw as JsonObject;
      const { key, id } = parseId(point.id);
      const payload = point.payload ?? {};
      if (typeof payload !== 'object' || Array.isArray(payload)) throw badFormat('payload must be an object');
      return { key, id, vector: readVector(point.vector, collection), payload: payload as JsonObject };
    });
    for (const p of parsed) {
      collection.points.set(p.key, { id: p.id, vector: p.vector, payload: p.payload, version: ++operation });
      if (collection.held) collection.unindexed.add(p.key);
    }
  };

  const selected = (collection: Collection, body: JsonObject): string[] => {
    if (Array.isArray(body.points)) return body.points.map((id) => parseId(id).key);
    if (body.filter) {
      const filter = body.filter as JsonObject;
      return [...collection.points].filter(([key, p]) => filterHolds(p, key, filter)).map(([key]) => key);
    }
    throw badFormat('expected "points" or "filter"');
  };

  const setPayload = (collection: Collection, body: JsonObject) => {
    if (body.key !== undefined && body.key !== null) throw badFormat('the stand-in does not take "key"');
    const payload = body.payload;
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      throw badFormat('payload must be an object');
    }
    const keys = selected(collection, body);
    for (const key of keys) {
      if (!collection.points.has(key)) {
        throw new HttpError(404, `Not found: No point with id ${key.slice(2)} found`);
      }
    }
    for (const key of keys) Object.assign(collection.points.get(key)!.payload, payload);
  };

  const search = (collection: Collection, body: JsonObject) => {
    const limit = body.limit;
    const offset = body.offset ?? 0;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
      throw invalid(`limit: value ${JSON.stringify(limit)} invalid, must be 1 or larger`);
    }
    if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) {
      throw badFormat(`invalid offset ${JSON.stringify(offset)}`);
    }
    let query = readVector(body.vector, collection);
    if (collection.distance === 'Cosine') query = normalised(query);
    const filter = body.filter as JsonObject | null | undefined;
    const params = (body.params ?? {}) as JsonObject;
    let candidates = [...collection.points].filter(
      ([key, point]) =>
        !(params.indexed_only === true && collection.unindexed.has(key)) &&
        (!filter || filterHolds(point, key, filter)),
    );
    if (faults.lossyFilteredSearch && filter && params.exact !== true) {
      candidates = candidates.filter((_, i) => i % 2 === 0);
    }
    const threshold = body.score_threshold as number | null | undefined;
    const up = ascending(collection);
    const scored = candidates
      .map(([key, point]) => ({ key, point, score: score(collection, point.vector, query) }))
      .filter((s) => threshold == null || (up ? s.score <= threshold : s.score >= threshold))
      .sort((a, b) => {
        if (a.score !== b.score) return up ? a.score - b.score : b.score - a.score;
        return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
      });
    return scored.slice(offset, offset + limit).map(({ point, score }) => ({
      id: point.id,
      version: point.version,
      score,
      payload: selectPayload(point.payload, body.with_payload, false),
      vector: wantsVector(body.with_vector, false) ? Array.from(point.vector) : null,
    }));
  };

  const route = (method: string, path: string, query: URLSearchParams, body: JsonObject): unknown => {
    if (method === 'GET' && path === '/') return { title: 'qdrant REST stand-in', version: '1.16.0' };
    if (method === 'GET' && path === '/collections') {
      return { collections: [...collections.keys()].map((name) => ({ name })) };
    }
    const m = /^\/collections\/([^/]+)(\/.*)?$/.exec(path);
    if (!m) throw new HttpError(404, `Not found: ${path}`);
    const name = decodeURIComponent(m[1]!);
    const rest = m[2] ?? '';
    if (rest === '') {
      if (method === 'PUT') return createCollection(name, body);
      if (method === 'DELETE') return collections.delete(name);
      if (method === 'GET') return collectionInfo(collectionOf(name));
    }
    if (rest === '/exists' && method === 'GET') return { exists: collections.has(name) };
    const collection = collectionOf(name);
    if (rest === '/points' && method === 'POST') return retrieve(collection, body);
    if (rest === '/points' && method === 'PUT') {
      upsert(collection, body);
      return updateResult(query);
    }
    if (rest === '/points/delete' && method === 'POST') {
      for (const key of selected(collection, body)) {
        collection.points.delete(key);
        collection.unindexed.delete(key);
      }
      return updateResult(query);
    }
    if (rest === '/points/payload' && method === 'POST') {
      setPayload(collection, body);
      return updateResult(query);
    }
    if (rest === '/points/search' && method === 'POST') return search(collection, body);
    if (rest === '/points/search/batch' && method === 'POST') {
      if (!Array.isArray(body.searches)) throw badFormat('missing field `searches`');
      return body.searches.map((s) => search(collection, s as JsonObject));
    }
    throw new HttpError(404, `Not found: ${method} ${path}`);
  };

  const send = (res: ServerResponse, status: number, payload: unknown) => {
    const text = JSON.stringify(payload);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const time = () => (performance.now() - started) / 1000;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const text = Buffer.concat(chunks).toString('utf8');
    try {
      if (options.apiKey !== undefined) {
        const bearer = req.headers.authorization?.replace(/^Bearer\s+/i, '');
        if (req.headers['api-key'] !== options.apiKey && bearer !== options.apiKey) {
          throw new HttpError(401, 'Must provide an API key or an Authorization bearer token');
        }
      }
      let body: Json | undefined;
      if (text.trim() !== '') {
        try {
          body = JSON.parse(text) as Json;
        } catch (err) {
          throw badFormat((err as Error).message);
        }
      }
      requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, body });
      if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
        throw badFormat('expected a JSON object');
      }
      const result = route(req.method ?? 'GET', url.pathname, url.searchParams, (body ?? {}) as JsonObject);
      send(res, 200, { result, status: 'ok', time: time() });
    } catch (err) {
      if (err instanceof HttpError) send(res, err.status, { status: { error: err.message }, time: time() });
      else send(res, 500, { status: { error: `Service internal error: ${String(err)}` }, time: time() });
    }
  };

  const server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    setStatus(name, status, indexedVectorsCount = 0) {
      collectionOf(name).status = { status, indexed_vectors_count: indexedVectorsCount };
    },
    holdIndexing(name) {
      const collection = collectionOf(name);
      collection.held = true;
      return () => {
        collection.held = false;
        collection.unindexed.clear();
      };
    },
    stored(name) {
      return [...collectionOf(name).points.values()].map((p) => ({ id: p.id, payload: { ...p.payload } }));
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
