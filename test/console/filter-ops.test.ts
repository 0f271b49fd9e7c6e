import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FILTER_OPS as consoleOps } from '../../src/console/app/filter-ops.js';
import { FILTER_OPS } from '../../src/platform/vectordb/index.js';

test("the search playground offers exactly vss's filter operators", () => {
  assert.deepEqual([...consoleOps], [...FILTER_OPS]);
});
