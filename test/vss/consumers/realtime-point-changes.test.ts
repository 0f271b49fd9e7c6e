/**
 * The payload changes of one collection, without I/O: what is written, what is left alone, and how
 * points needing the same change share one setPayload call.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Payload } from '../../../src/platform/vectordb/index.js';
import { payloadValueFor } from '../../../src/vss/consumers/realtime-payload-value.js';
import { payloadFieldsToRead, pointChanges } from '../../../src/vss/consumers/realtime-point-changes.js';
import type { CollectionTarget } from '../../../src/vss/consumers/realtime-targets.js';
import { compileMembership } from '../../../src/vss/model/index.js';
import type { Attributes } from '../../../src/vss/store/index.js';

const target: CollectionTarget = {
  modelName: 'm',
  version: 1,
  variants: [
    { variant: 'organic', rule: compileMembership({}) },
    {
      variant: 'live',
      rule: compileMembership({
        criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }],
      }),
    },
    { variant: 'broken', rule: undefined },
  ],
};

describe('vss real-time point changes', () => {
  test('points with the same change share a group; unchanged fields and missing points are skipped', () => {
    const groups = pointChanges(target, {
      applied: new Map<string, Attributes>([
        ['a', { is_live: 'true' }],
        ['b', { is_live: 'true' }],
        ['c', { is_live: 'true' }],
        ['d', { brand: 'x' }],
        ['ghost', { is_live: 'true' }],
      ]),
      rows: new Map(),
      points: new Map<string, Payload>([
        ['a', { is_live: 'false', to_be_indexed_live: false }],
        ['b', { is_live: 'false', to_be_indexed_live: false }],
        ['c', { is_live: 'true', to_be_indexed_live: true }],
        ['d', { brand: 'y', to_be_indexed_live: true }],
      ]),
      indexFlags: new Map([
        ['a', { live: true, organic: true }],
        ['b', { live: true, organic: true }],
        ['c', { live: true, organic: true }],
      ]),
    });
    assert.deepEqual(groups, [
      { ids: ['a', 'b'], payload: { is_live: 'true', to_be_indexed_live: true } },
      { ids: ['d'], payload: { brand: 'x' } },
    ]);
  });

  test('without an embeddings row the flag is left; the attribute is still written', () => {
    const groups = pointChanges(target, {
      applied: new Map([['a', { is_live: 'true' }]]),
      rows: new Map(),
      points: new Map([['a', { to_be_indexed_live: false }]]),
      indexFlags: new Map(),
    });
    assert.deepEqual(groups, [{ ids: ['a'], payload: { is_live: 'true' } }]);
  });

  test('the rule sees the point payload over the aggregator row, with the applied values over both', () => {
    const rule = compileMembership({
      criteria: [
        { column_name: 'is_live', filter_value: 'true' },
        { column_name: 'brand', filter_value: 'acme' },
      ],
    });
    const both: CollectionTarget = { modelName: 'm', version: 1, variants: [{ variant: 'v', rule }] };
    const change = (point: Record<string, string>) =>
      pointChanges(both, {
        applied: new Map([['a', { is_live: 'true' }]]),
        rows: new Map([['a', { is_live: 'true', brand: 'acme' }]]),
        points: new Map([['a', { ...point, to_be_indexed_v: false }]]),
        indexFlags: new Map([['a', { v: true }]]),
      })[0]?.payload.to_be_indexed_v;
    assert.equal(change({}), true, 'brand from the aggregator row');
    assert.equal(
      change({ brand: 'other' }),
      undefined,
      "the point's payload (its event's) wins over the row",
    );
  });

  test('the fields read: applied labels, the labels of rules they touch, and those flags', () => {
    assert.deepEqual(
      payloadFieldsToRead(
        target,
        new Map<string, Attributes>([
          ['a', { is_live: 'true' }],
          ['b', { brand: 'x' }],
        ]),
      ),
      ['brand', 'is_live', 'to_be_indexed_live'],
    );
  });

  test('numeric text is a number whatever the point held; a number or boolean keeps its type', () => {
    assert.equal(payloadValueFor('9', 12), 9);
    assert.equal(payloadValueFor('9', '12'), 9);
    assert.equal(payloadValueFor('9', undefined), 9);
    assert.equal(payloadValueFor('-2.5e1', undefined), -25);
    assert.equal(payloadValueFor('9.0', 12), 9, 'a number stays one for any numeric text');
    assert.equal(payloadValueFor('9.0', undefined), 9);
    assert.equal(payloadValueFor('007', undefined), '007', 'a leading zero keeps the text');
    assert.equal(payloadValueFor(' 7', 'x'), ' 7');
    assert.equal(payloadValueFor('nine', 12), 'nine');
    assert.equal(payloadValueFor('false', true), false);
    assert.equal(payloadValueFor('false', 'x'), 'false');
    assert.equal(payloadValueFor(' ', 3), ' ');
  });
});
