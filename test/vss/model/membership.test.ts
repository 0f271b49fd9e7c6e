import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileMembership, isMember, mergeAttributes } from '../../../src/vss/model/index.js';

describe('variant membership (vss_filter)', () => {
  test('an empty filter admits every candidate whose index flag is true', () => {
    for (const filter of [{}, { criteria: [] }]) {
      const rule = compileMembership(filter);
      assert.equal(isMember(rule, true, {}), true);
      assert.equal(isMember(rule, false, {}), false);
    }
  });

  test('equality criteria compare as the vector DB filters do, with default_value for absent attributes', () => {
    const rule = compileMembership({
      criteria: [
        { column_name: 'is_live', filter_value: 'true', default_value: 'false' },
        { column_name: 'tier', filter_value: 1 },
      ],
    });
    assert.deepEqual([...rule.reads].sort(), ['is_live', 'tier']);
    assert.equal(isMember(rule, true, { is_live: 'true', tier: '1' }), true);
    assert.equal(isMember(rule, true, { is_live: true, tier: 1 }), true);
    assert.equal(isMember(rule, true, { tier: '1' }), false, 'default_value false applies');
    assert.equal(isMember(rule, true, { is_live: 'true' }), false, 'no default: absent fails equality');
    assert.equal(isMember(rule, true, { is_live: 'true', tier: null }), false);
  });

  test('a criterion with op and values uses that FilterOp', () => {
    const rule = compileMembership({
      criteria: [
        { column_name: 'brand', op: 'NOT_IN', values: ['acme'] },
        { column_name: 'price', op: 'BETWEEN_INCLUSIVE', values: ['10', '20'] },
      ],
    });
    assert.equal(isMember(rule, true, { brand: 'other', price: 15 }), true);
    assert.equal(isMember(rule, true, { brand: 'acme', price: 15 }), false);
    assert.equal(isMember(rule, true, { price: 21 }), false);
  });

  test('bad filters are INVALID_ARGUMENT naming the field', () => {
    const cases: [unknown, string][] = [
      [[], 'vss_filter'],
      [{ criteria: {} }, 'vss_filter.criteria'],
      [{ criteria: [{ filter_value: 'x' }] }, 'vss_filter.criteria[0].column_name'],
      [{ criteria: [{ column_name: 'a', filter_value: {} }] }, 'vss_filter.criteria[0].filter_value'],
      [{ criteria: [{ column_name: 'a', op: 'LIKE', values: [] }] }, 'vss_filter.criteria[0].op'],
      [{ criteria: [{ column_name: 'a', op: 'LT', values: ['x'] }] }, 'vss_filter.criteria[0].values'],
    ];
    for (const [filter, field] of cases) {
      assert.throws(
        () => compileMembership(filter),
        (error: { code?: string; field?: string; message: string }) =>
          error.code === 'INVALID_ARGUMENT' && String(error.field ?? error.message).startsWith(field),
        JSON.stringify(filter),
      );
    }
  });

  test('attributes: the event payload first, then the aggregator row', () => {
    assert.deepEqual(mergeAttributes({ a: '1', b: 2 }, { a: 'x', c: 'y', d: null, e: '12.50' }), {
      a: 1,
      b: 2,
      c: 'y',
      e: 12.5,
    });
  });
});
