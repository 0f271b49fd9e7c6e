/**
 * The vss store suite: one client per suite (PGlite starts slowly), every part run against it.
 * pglite-store.test.ts and postgres-store.test.ts run it on each adapter.
 */
import { after, before, describe } from 'node:test';
import type { MigrationReport, SqlClient } from '../../../src/platform/sql/index.js';
import { migrateVssStore, openVssStore, type VssStore } from '../../../src/vss/store/index.js';
import { entityDataTests } from './entity-data-tests.js';
import type { StoreContext } from './fixtures.js';
import { migrationTests } from './migration-tests.js';
import { operationTests } from './operation-tests.js';
import { readVersionTests } from './read-version-tests.js';
import { storeAndModelTests } from './store-model-tests.js';
import { variantAndVersionTests } from './variant-version-tests.js';

export interface StoreSuiteTarget {
  name: string;
  open(): Promise<SqlClient>;
  openPeer?: () => Promise<SqlClient>;
  skip?: string | false;
}

export function vssStoreSuite(target: StoreSuiteTarget): void {
  describe(`vss store on ${target.name}`, { skip: target.skip ?? false }, () => {
    let context: StoreContext | undefined;
    let firstRun: MigrationReport | undefined;
    before(async () => {
      const sql = await target.open();
      firstRun = await migrateVssStore(sql);
      const store: VssStore = await openVssStore(sql);
      const peer = target.openPeer === undefined ? undefined : await target.openPeer();
      context = peer === undefined ? { sql, store } : { sql, store, peer };
    });
    after(async () => {
      await context?.peer?.close();
      await context?.sql.close();
    });
    const get = (): StoreContext => {
      if (context === undefined) throw new Error('suite context not opened');
      return context;
    };

    migrationTests(get, () => firstRun);
    storeAndModelTests(get);
    variantAndVersionTests(get);
    operationTests(get);
    readVersionTests(get);
    entityDataTests(get);
  });
}
