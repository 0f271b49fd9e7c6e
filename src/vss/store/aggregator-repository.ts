/**
 * The aggregator: real-time attributes of an entity's candidates (`is_live_ad`, `out_of_stock`,
 * ...), one row per id and one text column per label, shared by every model of the entity. A label
 * seen for the first time gets its column before the values are written. Real-time writes are
 * ordered by their event's timestamp, per (id, label): the row remembers the timestamp each value
 * came from (entity-tables.ts, APPLIED_AT_COLUMN) and an older update never replaces a newer one.
 */
import { LatticeError } from '../../platform/errors.js';
import type { SqlQueryable, SqlValue } from '../../platform/sql/index.js';
import { APPLIED_AT_COLUMN, attributeColumn, type EntityTables } from './entity-tables.js';
import { quoteIdentifier, type SqlIdentifier, tableName } from './identifiers.js';
import { atomically } from './sql-support.js';

/** One `data` entry of a real-time event; null clears the attribute. */
export interface AttributeUpdate {
  id: string;
  label: string;
  value: string | null;
}

/** An update carrying its event's timestamp (any integer unit, the same for every producer). */
export interface TimedAttributeUpdate {
  id: string;
  label: string;
  value: string;
  timestamp: number;
}

export type Attributes = Record<string, string>;

/** What a timed write left in one row. */
export interface AppliedRow {
  /** The row after the write: every attribute it has (null ones left out). */
  attributes: Attributes;
  /** The labels this write set (its timestamp not older than the row's), with their values. */
  applied: Attributes;
}

function checkId(id: unknown, field: string): void {
  if (typeof id !== 'string' || id === '') {
    throw new LatticeError('INVALID_ARGUMENT', `${field} must be a non-empty string`, { field });
  }
}

function checkValue(value: unknown, nullable: boolean, field: string): void {
  if (typeof value === 'string' || (nullable && value === null)) return;
  throw new LatticeError('INVALID_ARGUMENT', `${field} must be a string`, { field });
}

function checkTimestamp(timestamp: unknown, field: string): void {
  if (!Number.isSafeInteger(timestamp) || (timestamp as number) < 0) {
    throw new LatticeError('INVALID_ARGUMENT', `${field} must be a non-negative integer`, { field });
  }
}

/** The row's text attributes (the id and bookkeeping columns are not attributes). */
function attributesOf(row: Record<string, unknown>): Attributes {
  const attributes: Attributes = {};
  for (const [column, value] of Object.entries(row)) {
    if (column !== 'id' && column !== APPLIED_AT_COLUMN && typeof value === 'string') {
      attributes[column] = value;
    }
  }
  return attributes;
}

export class AggregatorRepository {
  constructor(
    private readonly db: SqlQueryable,
    private readonly tables: EntityTables,
  ) {}

  /**
   * Writes the updates unconditionally, without timestamps (seeding, tools), adding columns for new
   * labels first (their own committed step, so the column exists even if the write fails and is
   * retried). Within the batch the last value for an (id, label) wins. One statement per label,
   * with ids and values as array parameters.
   */
  async upsert(table: string, updates: readonly AttributeUpdate[]): Promise<void> {
    const name = tableName(table, 'aggregator_table');
    const byLabel = new Map<SqlIdentifier, Map<string, string | null>>();
    updates.forEach((update, i) => {
      const label = attributeColumn(update.label, `data[${i}].label`);
      checkId(update.id, `data[${i}].id`);
      checkValue(update.value, true, `data[${i}].value`);
      let values = byLabel.get(label);
      if (values === undefined) {
        values = new Map();
        byLabel.set(label, values);
      }
      values.set(update.id, update.value);
    });
    if (byLabel.size === 0) return;
    const labels = [...byLabel.keys()].sort();
    await this.tables.addAttributeColumns(name, labels);
    await atomically(this.db, async (tx) => {
      for (const label of labels) {
        const values = byLabel.get(label)!;
        const ids = [...values.keys()].sort();
        const column = quoteIdentifier(label);
        await tx.query(
          `INSERT INTO ${quoteIdentifier(name)} (id, ${column})
           SELECT u.id, u.value FROM unnest($1::text[], $2::text[]) AS u(id, value)
           ON CONFLICT (id) DO UPDATE SET ${column} = EXCLUDED.${column}`,
          [ids, ids.map((id) => values.get(id) ?? null)],
        );
      }
    });
  }

  /**
   * Writes real-time updates in timestamp order, in one statement: for each (id, label) the newest
   * update of the batch (equal timestamps: the later one) is written unless the row already holds
   * a value from a newer timestamp. An equal timestamp overwrites, so a batch written again (a
   * redelivery) writes the same values and reports them applied again. Returns every touched row
   * as it is afterwards, with what this write applied.
   */
  async upsertLatest(
    table: string,
    updates: readonly TimedAttributeUpdate[],
  ): Promise<Map<string, AppliedRow>> {
    const name = tableName(table, 'aggregator_table');
    const latest = new Map<string, Map<SqlIdentifier, TimedAttributeUpdate>>();
    const labelSet = new Set<SqlIdentifier>();
    updates.forEach((update, i) => {
      const label = attributeColumn(update.label, `data[${i}].label`);
      checkId(update.id, `data[${i}].id`);
      checkValue(update.value, false, `data[${i}].value`);
      checkTimestamp(update.timestamp, `data[${i}].timestamp`);
      let row = latest.get(update.id);
      if (row === undefined) {
        row = new Map();
        latest.set(update.id, row);
      }
      const held = row.get(label);
      if (held === undefined || held.timestamp <= update.timestamp) row.set(label, update);
      labelSet.add(label);
    });
    const found = new Map<string, AppliedRow>();
    if (latest.size === 0) return found;
    const labels = [...labelSet].sort();
    await this.tables.addAttributeColumns(name, labels);
    await this.tables.addAppliedAtColumn(name);

    // Ids ascend so that concurrent batches lock rows in the same order.
    const ids = [...latest.keys()].sort();
    const params: SqlValue[] = [ids];
    for (const label of labels) {
      params.push(ids.map((id) => latest.get(id)!.get(label)?.value ?? null));
      params.push(ids.map((id) => latest.get(id)!.get(label)?.timestamp ?? null));
    }
    const { rows } = await this.db.query<Record<string, unknown>>(
      upsertLatestStatement(name, labels),
      params,
    );
    for (const row of rows) {
      const id = row.id as string;
      const appliedAt = (row[APPLIED_AT_COLUMN] ?? {}) as Record<string, unknown>;
      const attributes = attributesOf(row);
      const applied: Attributes = {};
      for (const [label, update] of latest.get(id) ?? []) {
        // The row keeps this update's timestamp exactly when this write won (or tied) for the label.
        if (Number(appliedAt[label]) === update.timestamp) applied[label] = update.value;
      }
      found.set(id, { attributes, applied });
    }
    return found;
  }

  /**
   * The attributes of each id that has a row (ids without one are absent); only `labels` when given
   * (a label no row has ever had is simply absent). Null values are left out.
   */
  async read(
    table: string,
    ids: readonly string[],
    labels?: readonly string[],
  ): Promise<Map<string, Attributes>> {
    const name = tableName(table, 'aggregator_table');
    const found = new Map<string, Attributes>();
    if (ids.length === 0) return found;
    let select = '*';
    if (labels !== undefined) {
      const wanted = labels.map((label, i) => attributeColumn(label, `labels[${i}]`));
      const columns = await this.tables.columns(name, wanted);
      select = ['id', ...wanted.filter((label) => columns.has(label)).map(quoteIdentifier)].join(', ');
    }
    const { rows } = await this.db.query<Record<string, unknown>>(
      `SELECT ${select} FROM ${quoteIdentifier(name)} WHERE id = ANY($1::text[])`,
      [[...ids]],
    );
    for (const row of rows) found.set(row.id as string, attributesOf(row));
    return found;
  }
}

/**
 * `INSERT ... ON CONFLICT DO UPDATE` over one row per id: `$1` the ids, then per label its values
 * and timestamps (null where the id does not touch the label). Each label's column takes the new
 * value only when the update touches it and is not older than the row's timestamp for it; the
 * timestamps merge the same way, so the pair (value, timestamp) always moves together.
 */
function upsertLatestStatement(table: SqlIdentifier, labels: readonly SqlIdentifier[]): string {
  const t = quoteIdentifier(table);
  const at = quoteIdentifier(APPLIED_AT_COLUMN);
  const columns = labels.map(quoteIdentifier);
  const inputs = labels.map((_, i) => `$${2 + 2 * i}::text[], $${3 + 2 * i}::bigint[]`);
  const aliases = labels.map((_, i) => `v${i}, ts${i}`);
  // Labels are checked SQL names ([a-z0-9_]), so they are safe inside a string literal too.
  const appliedAt = labels.map((label, i) => `'${label}', u.ts${i}`);
  const wins = (label: SqlIdentifier) =>
    `(EXCLUDED.${at} -> '${label}') IS NOT NULL AND coalesce((t.${at} ->> '${label}')::bigint <= (EXCLUDED.${at} ->> '${label}')::bigint, true)`;
  const assignments = labels.map(
    (label, i) =>
      `${columns[i]} = CASE WHEN ${wins(label)} THEN EXCLUDED.${columns[i]} ELSE t.${columns[i]} END`,
  );
  // jsonb_build_object takes at most 100 arguments: 50 labels per call.
  const objects: string[] = [];
  for (let start = 0; start < appliedAt.length; start += 50) {
    objects.push(`jsonb_build_object(${appliedAt.slice(start, start + 50).join(', ')})`);
  }
  return `INSERT INTO ${t} AS t (id, ${columns.join(', ')}, ${at})
          SELECT u.id, ${labels.map((_, i) => `u.v${i}`).join(', ')}, jsonb_strip_nulls(${objects.join(' || ')})
            FROM unnest($1::text[], ${inputs.join(', ')}) AS u(id, ${aliases.join(', ')})
          ON CONFLICT (id) DO UPDATE SET
            ${assignments.join(',\n            ')},
            ${at} = coalesce(t.${at}, '{}'::jsonb) || coalesce((
              SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(EXCLUDED.${at}) AS e
               WHERE coalesce((t.${at} ->> e.key)::bigint <= (e.value #>> '{}')::bigint, true)
            ), '{}'::jsonb)
          RETURNING *`;
}
