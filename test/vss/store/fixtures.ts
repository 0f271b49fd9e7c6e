/**
 * Shared pieces of the vss store suites: the context a suite opens once, domain fixtures with names
 * unique within the run, and assertions on errors and on what the database holds.
 */
import assert from 'node:assert/strict';
import { type ErrorCode, isLatticeError, type LatticeError } from '../../../src/platform/errors.js';
import type { SqlClient } from '../../../src/platform/sql/index.js';
import type { Model, NewModel, NewVariant, Store, VssStore } from '../../../src/vss/store/index.js';

export interface StoreContext {
  sql: SqlClient;
  store: VssStore;
  /** Another client on the same database, when the adapter allows one (PostgreSQL). */
  peer?: SqlClient;
}

/** Suites get their context lazily: it is opened in a `before` hook. */
export type Context = () => StoreContext;

export async function rejectsWith(
  work: Promise<unknown>,
  code: ErrorCode,
  field?: string,
): Promise<LatticeError> {
  let caught: unknown;
  await assert.rejects(work, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(isLatticeError(caught), `expected a LatticeError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (field !== undefined) assert.equal(caught.field, field, caught.message);
  return caught;
}

let sequence = 0;
/** A suffix unique in this process: each test registers its own entity and tables. */
export function unique(): number {
  sequence += 1;
  return sequence;
}

export function newModel(entity: string, storeId: number, modelName = 'm1'): NewModel {
  return {
    entity,
    modelName,
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: 604800,
    mqId: 7,
    modelConfig: { distanceFunction: 'COSINE', vectorDimension: 4 },
    storeId,
    trainingDataPath: 'file:///data/m1',
  };
}

export function newVariant(entity: string, modelName: string, variant: string): NewVariant {
  return {
    entity,
    modelName,
    variant,
    vssFilter: { criteria: [{ column_name: 'is_live', filter_value: 'true' }] },
    vectorDbType: 'EMBEDDED',
    vectorDbConfig: { m: 16, ef_construction: 100 },
    jobFrequency: 'FREQ_1D',
  };
}

export interface Registered {
  n: number;
  entity: string;
  storeRecord: Store;
  model: Model;
}

/** A store (tables `emb_<n>`, `agg_<n>`) for a fresh entity, with model `m1` registered on it. */
export async function registerModel(store: VssStore): Promise<Registered> {
  const n = unique();
  const entity = `entity${n}`;
  const storeRecord = await store.stores.create({
    storeId: n,
    entity,
    dbConfId: 'main',
    embeddingsTable: `emb_${n}`,
    aggregatorTable: `agg_${n}`,
  });
  const model = await store.models.create(newModel(entity, n));
  return { n, entity, storeRecord, model };
}

/** Column names of a table in the current schema, sorted. */
export async function columnsOf(sql: SqlClient, table: string): Promise<string[]> {
  const { rows } = await sql.query<{ name: string }>(
    `SELECT column_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = $1 ORDER BY column_name`,
    [table],
  );
  return rows.map((row) => row.name);
}

/** Tables of the current schema, sorted. */
export async function tablesOf(sql: SqlClient): Promise<string[]> {
  const { rows } = await sql.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() ORDER BY table_name`,
  );
  return rows.map((row) => row.name);
}

export async function countRows(sql: SqlClient, table: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(`SELECT count(*) AS n FROM "${table}"`);
  return Number(rows[0]?.n);
}
