import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MigrationReport } from '../../../src/platform/sql/index.js';
import { JOB_STATES } from '../../../src/vss/admin/jobs/index.js';
import {
  CLUSTERS,
  DISTANCE_FUNCTIONS,
  JOB_FREQUENCIES,
  MODEL_STATES,
  migrateVssStore,
  OPERATION_KINDS,
  OPERATION_STATUSES,
  openVssStore,
  VARIANT_STATES,
  VECTOR_DB_TYPES,
  VERSION_STATUSES,
  vssMigrations,
} from '../../../src/vss/store/index.js';
import { type Context, tablesOf } from './fixtures.js';

export function migrationTests(context: Context, firstRun: () => MigrationReport | undefined): void {
  describe('migrations', () => {
    test('a fresh database gets every migration, recorded in vss_schema_migrations', async () => {
      const { sql } = context();
      const versions = vssMigrations.map((m) => m.version);
      assert.deepEqual(firstRun(), { applied: versions, current: versions.length });
      const tables = await tablesOf(sql);
      for (const table of [
        'vss_schema_migrations',
        'vss_stores',
        'vss_models',
        'vss_versions',
        'vss_variants',
        'vss_operations',
      ]) {
        assert.ok(tables.includes(table), `${table} exists`);
      }
      const { rows } = await sql.query<{ version: number }>(
        'SELECT version FROM vss_schema_migrations ORDER BY 1',
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        versions,
      );
    });

    test('re-applying is a no-op, and opening the store again migrates nothing', async () => {
      const { sql } = context();
      assert.deepEqual(await migrateVssStore(sql), { applied: [], current: vssMigrations.length });
      await openVssStore(sql);
      assert.deepEqual(await migrateVssStore(sql), { applied: [], current: vssMigrations.length });
    });

    test("the domain's value lists are exactly what the CHECK constraints accept", async () => {
      const { sql } = context();
      const accepted = async (table: string, constraint: string): Promise<string[]> => {
        const { rows } = await sql.query<{ def: string }>(
          `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = to_regclass($1) AND conname = $2`,
          [table, constraint],
        );
        assert.equal(rows.length, 1, `${table}.${constraint} exists`);
        return [...(rows[0]?.def ?? '').matchAll(/'([A-Za-z0-9_]+)'::text/g)].map((m) => m[1] ?? '').sort();
      };
      const same = async (table: string, constraint: string, values: readonly string[]) =>
        assert.deepEqual(await accepted(table, constraint), [...values].sort(), `${table}.${constraint}`);
      const notFailed = <T extends string>(values: readonly T[]) => values.filter((v) => v !== 'FAILED');

      await same('vss_models', 'state', MODEL_STATES);
      await same('vss_models', 'cluster', CLUSTERS);
      await same('vss_variants', 'state', VARIANT_STATES);
      await same('vss_variants', 'cluster', CLUSTERS);
      await same('vss_variants', 'vectordb_type', VECTOR_DB_TYPES);
      await same('vss_variants', 'job_frequency', JOB_FREQUENCIES);
      await same('vss_versions', 'status', VERSION_STATUSES);
      await same('vss_operations', 'status', OPERATION_STATUSES);
      await same('vss_operations', 'kind', OPERATION_KINDS);
      await same('vss_job_records', 'state', JOB_STATES);
      // failed_state lists every state but FAILED; the model_config check names the distance functions
      // (and only distance functions among its quoted values other than JSON keys and types).
      assert.deepEqual(
        await accepted('vss_models', 'failed_state'),
        ['FAILED', ...notFailed(MODEL_STATES)].sort(),
      );
      assert.deepEqual(
        await accepted('vss_variants', 'failed_state'),
        ['FAILED', ...notFailed(VARIANT_STATES)].sort(),
      );
      const config = await accepted('vss_models', 'model_config');
      for (const fn of DISTANCE_FUNCTIONS) assert.ok(config.includes(fn), fn);
      assert.deepEqual(
        config.filter((v) => /^[A-Z]+$/.test(v)),
        [...DISTANCE_FUNCTIONS].sort(),
      );
    });
  });
}
