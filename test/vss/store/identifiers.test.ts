import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import {
  attributeLabel,
  quoteIdentifier,
  resourceName,
  type SqlIdentifier,
  tableName,
  variantColumn,
  variantName,
} from '../../../src/vss/store/identifiers.js';

function refused(fn: () => unknown, field: string): void {
  assert.throws(fn, (err: unknown) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === field);
}

const attacks = [
  'x; DROP TABLE vss_models; --',
  'x" text, "y',
  "x'--",
  'x\u0000',
  'x y',
  'é',
  'X',
  '1x',
  '_x',
  '',
  'a'.repeat(64),
];

describe('configured SQL identifiers', () => {
  test('table names: lower-case names up to 63 bytes, not in the reserved vss_/pg_ space', () => {
    for (const ok of ['emb', 'catalog_embeddings', 'a1_b2', 'a'.repeat(63)])
      assert.equal(tableName(ok, 'embeddings_table'), ok);
    for (const bad of [...attacks, 'vss_models', 'pg_class'])
      refused(() => tableName(bad, 'embeddings_table'), 'embeddings_table');
    refused(() => tableName(42, 'aggregator_table'), 'aggregator_table');
  });

  test('variants are checked before being composed into to_be_indexed_<variant>, which stays within 63 bytes', () => {
    assert.equal(variantColumn('organic'), 'to_be_indexed_organic');
    assert.equal(variantColumn('v'.repeat(49)).length, 63);
    assert.equal(variantName('ad_2'), 'ad_2');
    for (const bad of [...attacks, 'v'.repeat(50)]) {
      refused(() => variantColumn(bad), 'variant');
      refused(() => variantName(bad, 'rows[0].variant'), 'rows[0].variant');
    }
  });

  test('attribute labels: identifiers other than the key column', () => {
    assert.equal(attributeLabel('is_live_ad'), 'is_live_ad');
    for (const bad of [...attacks, 'id'])
      refused(() => attributeLabel(bad, 'data[0].label'), 'data[0].label');
  });

  test('entity and model names are path-safe values', () => {
    for (const ok of ['catalog', 'product-embeddings', 'v1.2_x', 'A'])
      assert.equal(resourceName(ok, 'entity'), ok);
    for (const bad of ['', 'a/b', 'a b', '-a', '.hidden', 'x'.repeat(129), "x'"])
      refused(() => resourceName(bad, 'model_name'), 'model_name');
  });

  test('quoting double-quotes a checked name and refuses anything that skipped the checks', () => {
    assert.equal(quoteIdentifier(tableName('emb', 't')), '"emb"');
    refused(() => quoteIdentifier('x"; DROP TABLE t; --' as SqlIdentifier), 'identifier');
  });
});
