/**
 * The aggregator: real-time attributes of an entity's candidates (`is_live_ad`, `out_of_stock`,
 * ...), one row per id and one text column per label, shared by every model of the entity. A label
 * seen for the first time gets its column before the values are written.
 */
import { LatticeError } from '../../platform/errors.js';
import type { SqlQueryable } from '../../platform/sql/index.js';
import type { EntityTables } from './entity-tables.js';
import { attributeLabel, quoteIdentifier, type SqlIdentifier, tableName } from './identifiers.js';
import { atomically } from './sql-support.js';

/** One `data` entry of a real-time event; null clears the attribute. */
export interface AttributeUpdate {
  id: string;
  label: string;
  value: string | null;
}

export type Attributes = Record<string, string>;

export class AggregatorRepository {
  constructor(
    private readonly db: SqlQueryable,
    private readonly tables: EntityTables,
  ) {}

  /**
   * Writes the updates, adding columns for new labels first (their own committed step, so the
   * column exists even if the write fails and is retried). Within the batch the last value for an
   * (id, label) wins. One statement per label, with ids and values as array parameters.
   */
  async upsert(table: string, updates: readonly AttributeUpdate[]): Promise<void> {
    const name = tableName(table, 'aggregator_table');
    const byLabel = new Map<SqlIdentifier, Map<string, string | null>>();
    updates.forEach((update, i) => {
      const label = attributeLabel(update.label, `data[${i}].label`);
      if (typeof update.id !== 'string' || update.id === '') {
        throw new LatticeError('INVALID_ARGUMENT', `data[${i}].id must be a non-empty string`, {
          field: `data[${i}].id`,
        });
      }
      if (update.value !== null && typeof update.value !== 'string') {
        throw new LatticeError('INVALID_ARGUMENT', `data[${i}].value must be a string`, {
          field: `data[${i}].value`,
        });
      }
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
      const wanted = labels.map((label, i) => attributeLabel(label, `labels[${i}]`));
      const columns = await this.tables.columns(name, wanted);
      select = ['id', ...wanted.filter((label) => columns.has(label)).map(quoteIdentifier)].join(', ');
    }
    const { rows } = await this.db.query<Record<string, unknown>>(
      `SELECT ${select} FROM ${quoteIdentifier(name)} WHERE id = ANY($1::text[])`,
      [[...ids]],
    );
    for (const row of rows) {
      const attributes: Attributes = {};
      for (const [column, value] of Object.entries(row)) {
        if (column !== 'id' && typeof value === 'string') attributes[column] = value;
      }
      found.set(row.id as string, attributes);
    }
    return found;
  }
}
