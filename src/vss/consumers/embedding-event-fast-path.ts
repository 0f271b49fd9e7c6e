/**
 * Embedding events that are plainly valid, decoded without the schema. Validating an event with the
 * zod schema (embedding-event.ts) cost about 12 µs of the consumers' event loop per event, more than
 * decoding its JSON, at tens of thousands of events a second (bench/RESULTS.md, "vss-ingest"); these
 * checks cost about 1 µs.
 *
 * {@link plainEmbeddingEvent} holds an event to the same rules as the schema, from the same limits
 * (embedding-event-rules.ts), and answers with the same event the schema path would; whenever the
 * event breaks a rule, or takes a form it does not handle, it answers undefined and the schema decides
 * (and words the refusal). So it may send a valid event the long way, but never accepts one the schema
 * refuses: test/vss/consumers/embedding-event-fast-path.test.ts compares the two on valid and broken
 * events of both shapes.
 */
import type { Payload, PayloadValue } from '../../platform/vectordb/index.js';
import {
  type EmbeddingEvent,
  FLAG_PREFIX,
  FLOAT32_MAX,
  MAX_CANDIDATE_ID,
  MAX_DIMENSION,
  MAX_PAYLOAD_FIELDS,
  MAX_VARIANTS,
  OPERATIONS,
  PAYLOAD_KEY,
  VARIANT_KEY,
} from './embedding-event-rules.js';
import { integerIn, MAX_JOB_ID, MAX_VERSION, MIN_VERSION, RESOURCE_NAME } from './event-fields.js';
import { VectorSlab } from './vector-slab.js';

type Fields = Record<string, unknown>;

function plainObject(value: unknown): Fields | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null ? (value as Fields) : undefined;
}

/** A JSON-holding field (a JSON text, or the value itself) that must hold an object. */
function jsonObject(value: unknown): Fields | undefined {
  if (typeof value !== 'string') return plainObject(value);
  try {
    return plainObject(JSON.parse(value));
  } catch {
    return undefined;
  }
}

/**
 * The last variant map decoded from JSON text, per field: a producer's events mostly carry the same
 * text, so they share one (read-only) map rather than each parsing its own. Two maps per event were
 * about a seventh of the bytes the consumers' in-flight events kept alive into the old generation,
 * which the collector's marking then spends time on (bench/RESULTS.md, "vss-ingest").
 */
class LastMap<T> {
  #text: string | undefined;
  #map: ReadonlyMap<string, T> | undefined;

  constructor(readonly read: (v: unknown) => T | undefined) {}

  of(value: unknown): ReadonlyMap<string, T> | undefined {
    if (typeof value !== 'string') return variantMap(value, this.read);
    if (value === this.#text) return this.#map;
    const map = variantMap(value, this.read);
    // Only an accepted map is kept: a refusal goes to the schema, which words it.
    if (map !== undefined) {
      this.#text = value;
      this.#map = map;
    }
    return map;
  }
}

/** A variant map: at most MAX_VARIANTS variant names, each with a value `read` accepts. */
function variantMap<T>(value: unknown, read: (v: unknown) => T | undefined): Map<string, T> | undefined {
  const fields = jsonObject(value);
  if (fields === undefined) return undefined;
  const map = new Map<string, T>();
  for (const key in fields) {
    if (!Object.hasOwn(fields, key) || !VARIANT_KEY.test(key)) return undefined;
    const entry = read(fields[key]);
    if (entry === undefined) return undefined;
    map.set(key, entry);
  }
  return map.size <= MAX_VARIANTS ? map : undefined;
}

const versionOf = (value: unknown) => integerIn(value, MIN_VERSION, MAX_VERSION);
const flagOf = (value: unknown) => (typeof value === 'boolean' ? value : undefined);
const versionMaps = new LastMap(versionOf);
const flagMaps = new LastMap(flagOf);

/** Decoded vectors share buffers (vector-slab.ts). */
const vectors = new VectorSlab();

/**
 * A vector: undefined when absent, `false` when not acceptable, else its values (maybe none). A
 * Float32Array is one embedding-array-lift.ts read from the bytes, already held to these rules.
 */
function vectorOf(value: unknown): Float32Array | undefined | false {
  if (value === undefined) return undefined;
  if (value instanceof Float32Array) return value;
  if (!Array.isArray(value) || value.length > MAX_DIMENSION) return false;
  const vector = vectors.take(value.length);
  for (let i = 0; i < value.length; i++) {
    const x: unknown = value[i];
    // False for NaN and the infinities too.
    if (typeof x !== 'number' || !(x <= FLOAT32_MAX && x >= -FLOAT32_MAX)) {
      vectors.giveBack(vector);
      return false;
    }
    vector[i] = x;
  }
  return vector;
}

function payloadOf(value: unknown): Payload | undefined {
  const fields = jsonObject(value);
  if (fields === undefined) return undefined;
  const payload: Payload = {};
  let count = 0;
  for (const key in fields) {
    // `__proto__` is a field name the schema has rules of its own for.
    if (
      !Object.hasOwn(fields, key) ||
      !PAYLOAD_KEY.test(key) ||
      key.startsWith(FLAG_PREFIX) ||
      key === '__proto__'
    )
      return undefined;
    count++;
    const field = fields[key];
    if (field === null) continue; // no value: the aggregator's applies
    if (typeof field === 'string' || typeof field === 'boolean') payload[key] = field;
    else if (typeof field === 'number' && Number.isFinite(field)) payload[key] = field;
    else if (Array.isArray(field) && field.every((item) => typeof item === 'string'))
      payload[key] = [...field] as PayloadValue;
    else return undefined;
  }
  return count <= MAX_PAYLOAD_FIELDS ? payload : undefined;
}

/** The event, when `message` is plainly valid; undefined sends it to the schema. */
export function plainEmbeddingEvent(message: unknown, eventKey: string): EmbeddingEvent | undefined {
  const event = plainObject(message);
  if (event === undefined) return undefined;
  const { entity, model_name: modelName } = event;
  if (typeof entity !== 'string' || !RESOURCE_NAME.test(entity)) return undefined;
  if (typeof modelName !== 'string' || !RESOURCE_NAME.test(modelName)) return undefined;

  const id = event.candidate_id;
  let candidateId: string;
  if (typeof id === 'string') {
    if (id.length === 0 || id.length > MAX_CANDIDATE_ID || id.includes('\u0000')) return undefined;
    candidateId = id;
  } else if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) candidateId = String(id);
  else return undefined;

  const named = event.version === undefined ? undefined : versionOf(event.version);
  if (event.version !== undefined && named === undefined) return undefined;
  const original =
    event.embedding_store_version === undefined ? undefined : versionOf(event.embedding_store_version);
  if (event.embedding_store_version !== undefined && original === undefined) return undefined;
  const version = named ?? original;
  if (version === undefined || (named !== undefined && original !== undefined && named !== original))
    return undefined;

  const jobId = event.job_id;
  if (jobId !== undefined && (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > MAX_JOB_ID))
    return undefined;

  const space = plainObject(event.index_space);
  if (space === undefined) return undefined;
  const variantVersions = versionMaps.of(space.variants_version_map);
  if (variantVersions === undefined) return undefined;
  const indexFlags =
    space.variants_index_map === undefined ? undefined : flagMaps.of(space.variants_index_map);
  if (space.variants_index_map !== undefined && indexFlags === undefined) return undefined;
  const embedding = vectorOf(space.embedding);
  if (embedding === false) return undefined;
  const letters = space.operation;
  if (typeof letters !== 'string' || !Object.hasOwn(OPERATIONS, letters)) return undefined;
  const operation = OPERATIONS[letters]!;
  const payload = space.payload === undefined ? undefined : payloadOf(space.payload);
  if (space.payload !== undefined && payload === undefined) return undefined;
  if (operation === 'A' && (embedding === undefined || embedding.length === 0)) return undefined;

  let search: Float32Array | undefined;
  if (event.search_space !== undefined && event.search_space !== null) {
    const searchSpace = plainObject(event.search_space);
    if (searchSpace === undefined) return undefined;
    const vector = vectorOf(searchSpace.embedding);
    if (vector === false) return undefined;
    search = vector;
  }

  return {
    entity,
    modelName,
    candidateId,
    version,
    jobId,
    operation,
    variantVersions,
    indexFlags,
    // An empty list is how some producers say "none" (deletes, payload updates).
    embedding: embedding !== undefined && embedding.length > 0 ? embedding : undefined,
    searchEmbedding: search !== undefined && search.length > 0 ? search : undefined,
    payload,
    eventKey,
  };
}
