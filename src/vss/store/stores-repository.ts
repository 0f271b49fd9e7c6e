/**
 * Stores: one per entity, naming the entity's embeddings and aggregator tables. Registering a store
 * creates both tables in the same transaction as its row.
 */
import { LatticeError, notFound } from '../../platform/errors.js';
import type { SqlQueryable } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import { EntityTables } from './entity-tables.js';
import { resourceName, tableName } from './identifiers.js';
import { atomically, integerField } from './sql-support.js';
import type { NewStore, Store } from './types.js';

interface StoreRow {
  store_id: number;
  entity: string;
  db_conf_id: string;
  embeddings_table: string;
  aggregator_table: string;
  created_at: Date;
}

const columns = 'store_id, entity, db_conf_id, embeddings_table, aggregator_table, created_at';

function toStore(row: StoreRow): Store {
  return {
    storeId: row.store_id,
    entity: row.entity,
    dbConfId: row.db_conf_id,
    embeddingsTable: row.embeddings_table,
    aggregatorTable: row.aggregator_table,
    createdAt: row.created_at,
  };
}

export class StoresRepository {
  constructor(private readonly db: SqlQueryable) {}

  /**
   * Registers the store and creates its tables. ALREADY_EXISTS (naming the field) when the id, the
   * entity or a table name is taken, as either kind of table.
   */
  async create(store: NewStore): Promise<Store> {
    integerField(store.storeId, 'store_id', 1);
    resourceName(store.entity, 'entity');
    const embeddingsTable = tableName(store.embeddingsTable, 'embeddings_table');
    const aggregatorTable = tableName(store.aggregatorTable, 'aggregator_table');
    if (embeddingsTable === aggregatorTable) {
      throw new LatticeError('INVALID_ARGUMENT', 'aggregator_table must differ from embeddings_table', {
        field: 'aggregator_table',
      });
    }
    return atomically(this.db, async (tx) => {
      // Registrations are rare: taking them one at a time makes the cross-column check below exact.
      await tx.query('LOCK TABLE vss_stores IN SHARE ROW EXCLUSIVE MODE');
      const { rows: taken } = await tx.query<StoreRow>(
        `SELECT ${columns} FROM vss_stores
          WHERE store_id = $1 OR entity = $2
             OR embeddings_table IN ($3, $4) OR aggregator_table IN ($3, $4)`,
        [store.storeId, store.entity, embeddingsTable, aggregatorTable],
      );
      const clash = taken[0];
      if (clash !== undefined) throw conflict(clash, store);
      const { rows } = await withConstraintErrors(
        () =>
          tx.query<StoreRow>(
            `INSERT INTO vss_stores (store_id, entity, db_conf_id, embeddings_table, aggregator_table)
             VALUES ($1, $2, $3, $4, $5) RETURNING ${columns}`,
            [store.storeId, store.entity, store.dbConfId, embeddingsTable, aggregatorTable],
          ),
        { alreadyExists: `store ${store.storeId} already exists` },
      );
      const tables = new EntityTables(tx);
      await tables.createEmbeddingsTable(embeddingsTable);
      await tables.createAggregatorTable(aggregatorTable);
      return toStore(rows[0]!);
    });
  }

  async find(storeId: number): Promise<Store | undefined> {
    const { rows } = await this.db.query<StoreRow>(`SELECT ${columns} FROM vss_stores WHERE store_id = $1`, [
      storeId,
    ]);
    return rows[0] === undefined ? undefined : toStore(rows[0]);
  }

  async get(storeId: number): Promise<Store> {
    const store = await this.find(storeId);
    if (store === undefined) throw notFound(`store ${storeId} does not exist`, 'store_id');
    return store;
  }

  /** The entity's store (each entity has at most one). */
  async findByEntity(entity: string): Promise<Store | undefined> {
    const { rows } = await this.db.query<StoreRow>(`SELECT ${columns} FROM vss_stores WHERE entity = $1`, [
      entity,
    ]);
    return rows[0] === undefined ? undefined : toStore(rows[0]);
  }

  async getByEntity(entity: string): Promise<Store> {
    const store = await this.findByEntity(entity);
    if (store === undefined) throw notFound(`entity ${entity} has no store`, 'entity');
    return store;
  }

  async list(): Promise<Store[]> {
    const { rows } = await this.db.query<StoreRow>(`SELECT ${columns} FROM vss_stores ORDER BY store_id`);
    return rows.map(toStore);
  }
}

function conflict(row: StoreRow, store: NewStore): LatticeError {
  const exists = (message: string, field: string) => new LatticeError('ALREADY_EXISTS', message, { field });
  if (row.store_id === store.storeId) return exists(`store ${store.storeId} already exists`, 'store_id');
  if (row.entity === store.entity) {
    return exists(`entity ${store.entity} already has store ${row.store_id}`, 'entity');
  }
  const names = [row.embeddings_table, row.aggregator_table];
  const field = names.includes(store.embeddingsTable) ? 'embeddings_table' : 'aggregator_table';
  const table = field === 'embeddings_table' ? store.embeddingsTable : store.aggregatorTable;
  return exists(`table "${table}" already belongs to store ${row.store_id}`, field);
}
