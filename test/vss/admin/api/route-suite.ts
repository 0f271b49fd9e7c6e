/**
 * The admin API's route suite on one SQL adapter: every route's success and error answers, each
 * checked against the OpenAPI document the app serves; it ends by asserting that every documented
 * route was seen both succeeding and failing. pglite-api.test.ts and postgres-api.test.ts run it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { SqlClient } from '../../../../src/platform/sql/index.js';
import { type Harness, openHarness } from './api-harness.js';
import { authTests, idempotencyTests } from './auth-idempotency-tests.js';
import { operationTests } from './operation-tests.js';
import { protocolTests } from './protocol-tests.js';
import { registrationTests } from './registration-tests.js';
import { statusTests } from './status-tests.js';

export interface RouteSuiteTarget {
  name: string;
  open(): Promise<SqlClient>;
  skip?: string | false;
}

/** Routes that never answer a 4xx of their own (probes and the scrape stay open). */
const noClientErrors = new Set(['GET /healthz', 'GET /readyz', 'GET /metrics']);

export function adminRouteSuite(target: RouteSuiteTarget): void {
  describe(`vss admin API on ${target.name}`, { skip: target.skip ?? false }, () => {
    let harness: Harness | undefined;
    let sql: SqlClient | undefined;
    before(async () => {
      sql = await target.open();
      harness = await openHarness(sql);
    });
    after(async () => {
      await harness?.close();
      await sql?.close();
    });
    const get = (): Harness => {
      if (harness === undefined) throw new Error('suite harness not opened');
      return harness;
    };

    registrationTests(get);
    operationTests(get);
    statusTests(get);
    protocolTests(get);
    authTests(get);
    idempotencyTests(get);

    test('every documented route was seen succeeding and failing, each answer matching the document', () => {
      const { checker } = get();
      const missing: string[] = [];
      for (const route of checker.documentedRoutes) {
        const statuses = [...(checker.seen.get(route) ?? [])];
        if (!statuses.some((s) => s >= 200 && s < 300)) missing.push(`${route}: no success`);
        if (!noClientErrors.has(route) && !statuses.some((s) => s >= 400 && s < 500)) {
          missing.push(`${route}: no client error`);
        }
      }
      assert.deepEqual(missing, []);
    });
  });
}
