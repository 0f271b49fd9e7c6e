/**
 * Numbered schema migrations. Each set (the platform's, vss's, ...) records what it applied in its
 * own table, so sets evolve independently. Each migration runs in its own transaction together with
 * its record, under a transaction-scoped advisory lock keyed by the schema and table, so runners
 * started at the same time by several replicas apply each migration exactly once. (PGlite honours
 * the same lock; it is single-process anyway.)
 */
import { createHash } from 'node:crypto';
import { LatticeError } from '../errors.js';
import type { SqlClient, SqlTransaction } from './sql-client.js';

export interface Migration {
  /** 1, 2, 3, ...: no gaps, no duplicates, never renumbered once released. */
  version: number;
  name: string;
  /** SQL (may hold several statements), or code that runs its statements on `tx`. */
  up: string | ((tx: SqlTransaction) => Promise<void>);
  /**
   * Only for code migrations: an author-given fingerprint (any string) recorded and compared like
   * the hash of a SQL migration. Code's source text cannot serve, since transpilers and formatters
   * change it without changing what it does.
   */
  checksum?: string;
}

export interface MigrateOptions {
  /** Table recording the applied migrations of this set (default `schema_migrations`). */
  table?: string;
}

export interface MigrationReport {
  /** Versions this run applied, in order (empty when the database was up to date). */
  applied: number[];
  /** The highest version now recorded. */
  current: number;
}

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

const tableName = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * What is recorded for a migration; once applied, a different value makes the runner refuse to go
 * on. SQL: a hash of its text (line endings normalised). Code: its `checksum` field.
 */
export function migrationChecksum(migration: Migration): string {
  const body =
    typeof migration.up === 'string'
      ? `sql:${migration.up.replace(/\r\n/g, '\n')}`
      : `code:${migration.checksum ?? ''}`;
  return createHash('sha256').update(body).digest('hex');
}

function validate(migrations: readonly Migration[]): Migration[] {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  sorted.forEach((migration, i) => {
    const field = `migrations[${migrations.indexOf(migration)}].version`;
    if (!Number.isInteger(migration.version) || migration.version < 1) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `migration version must be a positive integer, got ${migration.version}`,
        {
          field,
        },
      );
    }
    if (migration.version === sorted[i - 1]?.version) {
      throw new LatticeError('INVALID_ARGUMENT', `migration version ${migration.version} is used twice`, {
        field,
      });
    }
    if (migration.version !== i + 1) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `migration versions must be 1, 2, 3, ... without gaps: expected ${i + 1}, found ${migration.version}`,
        { field },
      );
    }
    if (migration.name.trim() === '') {
      throw new LatticeError('INVALID_ARGUMENT', `migration ${migration.version} has no name`, {
        field: `migrations[${migrations.indexOf(migration)}].name`,
      });
    }
  });
  return sorted;
}

/** Refuses to run against a history that differs from the code: it would be guessing. */
function checkRecorded(row: AppliedRow, known: Migration | undefined, table: string): void {
  if (known === undefined) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${table} records migration ${row.version} (${row.name}), which this build does not have: the database is newer than the code`,
    );
  }
  if (row.checksum !== migrationChecksum(known)) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `migration ${row.version} (${known.name}) was changed after it was applied (checksum differs from ${table}); add a new migration instead`,
    );
  }
}

/** Applies the migrations not yet recorded in `options.table`, in order, each in its own transaction. */
export async function migrate(
  client: SqlClient,
  migrations: readonly Migration[],
  options: MigrateOptions = {},
): Promise<MigrationReport> {
  const table = options.table ?? 'schema_migrations';
  if (!tableName.test(table)) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `migration table must be a lower-case SQL identifier, got "${table}"`,
      {
        field: 'table',
      },
    );
  }
  const ordered = validate(migrations);
  const lock = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.' || $1))`;

  await client.transaction(async (tx) => {
    await tx.query(lock, [table]);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${table} (
         version integer PRIMARY KEY,
         name text NOT NULL,
         checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
  });

  const recorded = await client.query<AppliedRow>(
    `SELECT version, name, checksum FROM ${table} ORDER BY version`,
  );
  for (const row of recorded.rows) checkRecorded(row, ordered[row.version - 1], table);

  const applied: number[] = [];
  const done = new Set(recorded.rows.map((row) => row.version));
  for (const migration of ordered) {
    if (done.has(migration.version)) continue;
    const ran = await client.transaction(async (tx) => {
      await tx.query(lock, [table]);
      // Another runner may have applied it while this one waited for the lock.
      const again = await tx.query<AppliedRow>(
        `SELECT version, name, checksum FROM ${table} WHERE version = $1`,
        [migration.version],
      );
      const row = again.rows[0];
      if (row !== undefined) {
        checkRecorded(row, migration, table);
        return false;
      }
      try {
        if (typeof migration.up === 'string') await tx.query(migration.up);
        else await migration.up(tx);
      } catch (err) {
        const code = err instanceof LatticeError ? err.code : 'INTERNAL';
        const reason = err instanceof Error ? err.message : String(err);
        throw new LatticeError(code, `migration ${migration.version} (${migration.name}) failed: ${reason}`, {
          cause: err,
        });
      }
      await tx.query(`INSERT INTO ${table} (version, name, checksum) VALUES ($1, $2, $3)`, [
        migration.version,
        migration.name,
        migrationChecksum(migration),
      ]);
      return true;
    });
    if (ran) applied.push(migration.version);
  }

  const current = await client.query<{ current: number | null }>(
    `SELECT max(version) AS current FROM ${table}`,
  );
  return { applied, current: current.rows[0]?.current ?? 0 };
}
