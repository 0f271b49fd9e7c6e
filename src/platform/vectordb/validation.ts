/**
 * Request validation every adapter runs before touching its store, so a bad request fails with the
 * same INVALID_ARGUMENT (naming the same field) whichever vector database sits behind the port.
 */
import { invalidArgument, LatticeError, notFound } from '../errors.js';
import {
  type CollectionSpec,
  DISTANCE_FUNCTIONS,
  HNSW_DEFAULTS,
  type HnswParams,
  type Payload,
  type PointInput,
  type SearchRequest,
  type VectorInput,
} from './vector-db.js';

export const LIMITS = {
  maxDimension: 65_536,
  maxIdLength: 1_024,
  /** Hits per query: a search costs its depth, and the answer holds them all. */
  maxLimit: 10_000,
  /** Candidate list width, of a collection or one search: past it a search costs an exact scan's work. */
  maxEfSearch: 4_096,
} as const;

const COLLECTION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/;

export function validateCollectionName(name: unknown, field = 'name'): string {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name)) {
    throw invalidArgument(
      `${field} must be 1-200 letters, digits, "_", "-" or ".", not starting with "-" or ".", got ${JSON.stringify(name)}`,
      field,
    );
  }
  return name;
}

function integerIn(value: unknown, low: number, high: number, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < low || value > high) {
    throw invalidArgument(`${field} must be an integer from ${low} to ${high}, got ${String(value)}`, field);
  }
  return value;
}

export interface ValidatedSpec {
  name: string;
  dimension: number;
  distance: CollectionSpec['distance'];
  hnsw: HnswParams;
}

export function validateCollectionSpec(spec: CollectionSpec): ValidatedSpec {
  const name = validateCollectionName(spec.name);
  const dimension = integerIn(spec.dimension, 1, LIMITS.maxDimension, 'dimension');
  if (!DISTANCE_FUNCTIONS.includes(spec.distance)) {
    throw invalidArgument(
      `distance must be one of ${DISTANCE_FUNCTIONS.join(', ')}, got ${JSON.stringify(spec.distance)}`,
      'distance',
    );
  }
  const given = spec.hnsw ?? {};
  const hnsw: HnswParams = {
    m: integerIn(given.m ?? HNSW_DEFAULTS.m, 2, 128, 'hnsw.m'),
    efConstruction: integerIn(
      given.efConstruction ?? HNSW_DEFAULTS.efConstruction,
      4,
      4096,
      'hnsw.efConstruction',
    ),
    efSearch: integerIn(given.efSearch ?? HNSW_DEFAULTS.efSearch, 1, LIMITS.maxEfSearch, 'hnsw.efSearch'),
  };
  return { name, dimension, distance: spec.distance, hnsw };
}

export function sameSpec(a: ValidatedSpec, b: ValidatedSpec): boolean {
  return (
    a.dimension === b.dimension &&
    a.distance === b.distance &&
    a.hnsw.m === b.hnsw.m &&
    a.hnsw.efConstruction === b.hnsw.efConstruction &&
    a.hnsw.efSearch === b.hnsw.efSearch
  );
}

export function describeSpec(spec: ValidatedSpec): string {
  const { m, efConstruction, efSearch } = spec.hnsw;
  return `dimension ${spec.dimension}, ${spec.distance}, m ${m}, ef_construction ${efConstruction}, ef_search ${efSearch}`;
}

/**
 * Checks a vector's length and values and returns it as a Float32Array: a copy, unless `copy` is
 * false and it already is one (queries are read once and not kept). With `into` (of `dimension`
 * values), the copy is made there.
 */
export function validateVector(
  vector: VectorInput,
  dimension: number,
  field: string,
  collection: string,
  copy = true,
  into?: Float32Array,
): Float32Array {
  if (!(vector instanceof Float32Array) && !Array.isArray(vector)) {
    throw invalidArgument(`${field} must be a list of numbers`, field);
  }
  if (vector.length !== dimension) {
    throw invalidArgument(
      `${field} has ${vector.length} values but collection "${collection}" has dimension ${dimension}`,
      field,
    );
  }
  let values: Float32Array;
  if (into !== undefined) {
    values = into;
    values.set(vector);
  } else values = copy || !(vector instanceof Float32Array) ? Float32Array.from(vector) : vector;
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i]!)) {
      throw invalidArgument(`${field}[${i}] must be a finite number, got ${String(vector[i])}`, field);
    }
  }
  return values;
}

export function validateId(id: unknown, field: string): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > LIMITS.maxIdLength) {
    throw invalidArgument(`${field} must be a string of 1 to ${LIMITS.maxIdLength} characters`, field);
  }
  return id;
}

export function validateIds(ids: readonly string[], field = 'ids'): readonly string[] {
  if (!Array.isArray(ids)) throw invalidArgument(`${field} must be a list of strings`, field);
  ids.forEach((id, i) => {
    validateId(id, `${field}[${i}]`);
  });
  return ids;
}

/** Checks a payload's shape; returns a copy the caller may keep. */
export function validatePayload(payload: unknown, field: string): Payload {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw invalidArgument(`${field} must be an object`, field);
  }
  const copy: Payload = {};
  for (const [key, value] of Object.entries(payload)) {
    const at = `${field}.${key}`;
    if (key.length === 0) throw invalidArgument(`${field} has an empty field name`, field);
    if (typeof value === 'string' || typeof value === 'boolean') copy[key] = value;
    else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw invalidArgument(`${at} must be a finite number`, at);
      copy[key] = value;
    } else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
      copy[key] = [...(value as string[])];
    } else {
      throw invalidArgument(`${at} must be a string, number, boolean or list of strings`, at);
    }
  }
  return copy;
}

export interface ValidatedPoint {
  id: string;
  vector: Float32Array;
  payload: Payload;
}

/** Validates every point before any is written; a repeated id keeps its last occurrence. */
export function validatePoints(
  points: readonly PointInput[],
  dimension: number,
  collection: string,
): ValidatedPoint[] {
  if (!Array.isArray(points)) throw invalidArgument('points must be a list', 'points');
  const byId = new Map<string, ValidatedPoint>();
  // The copies share one buffer per call: a buffer per point was an allocation the garbage
  // collector tracked and freed one by one, for copies that live only until the write is applied.
  const copies = new Float32Array(points.length * dimension);
  points.forEach((point, i) => {
    const at = `points[${i}]`;
    if (typeof point !== 'object' || point === null) throw invalidArgument(`${at} must be a point`, at);
    const id = validateId(point.id, `${at}.id`);
    const into = copies.subarray(i * dimension, (i + 1) * dimension);
    const vector = validateVector(point.vector, dimension, `${at}.vector`, collection, true, into);
    const payload = validatePayload(point.payload ?? {}, `${at}.payload`);
    byId.delete(id);
    byId.set(id, { id, vector, payload });
  });
  return [...byId.values()];
}

/** The scalar parts of a search request, checked. */
export function validateSearchShape(request: SearchRequest): void {
  if (typeof request !== 'object' || request === null) throw invalidArgument('request must be an object');
  integerIn(request.limit, 1, LIMITS.maxLimit, 'limit');
  if (request.efSearch !== undefined) integerIn(request.efSearch, 1, LIMITS.maxEfSearch, 'efSearch');
  if (!Array.isArray(request.queries)) throw invalidArgument('queries must be a list', 'queries');
  request.queries.forEach((query, i) => {
    if (query.excludeIds !== undefined) validateIds(query.excludeIds, `queries[${i}].excludeIds`);
  });
  const fields = request.withPayload;
  if (
    fields !== undefined &&
    typeof fields !== 'boolean' &&
    !(Array.isArray(fields) && fields.every((f) => typeof f === 'string'))
  ) {
    throw invalidArgument('withPayload must be a boolean or a list of field names', 'withPayload');
  }
}

/** The payload fields a caller asked for. */
export function selectPayload(
  payload: Payload,
  fields: boolean | readonly string[] | undefined,
): Payload | undefined {
  if (fields === undefined || fields === false) return undefined;
  if (fields === true) return copyPayload(payload);
  const picked: Payload = {};
  for (const field of fields) {
    const value = payload[field];
    if (value !== undefined && Object.hasOwn(payload, field))
      picked[field] = Array.isArray(value) ? [...value] : value;
  }
  return picked;
}

export function copyPayload(payload: Payload): Payload {
  const copy: Payload = {};
  for (const [key, value] of Object.entries(payload)) copy[key] = Array.isArray(value) ? [...value] : value;
  return copy;
}

export function collectionNotFound(name: string): LatticeError {
  return notFound(`collection "${name}" does not exist`, 'collection');
}

export function collectionConflict(
  name: string,
  existing: ValidatedSpec,
  wanted: ValidatedSpec,
): LatticeError {
  return new LatticeError(
    'ALREADY_EXISTS',
    `collection "${name}" exists with ${describeSpec(existing)}; asked for ${describeSpec(wanted)}`,
    { field: 'name' },
  );
}

export function closedError(): LatticeError {
  return new LatticeError('UNAVAILABLE', 'vector database is closed');
}
