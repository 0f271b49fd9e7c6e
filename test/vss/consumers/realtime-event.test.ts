/**
 * The real-time event at the boundary: both shapes parse into one form, and every kind of poison
 * event is rejected with a reason naming its field (the runner dead-letters it with that reason).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RejectedEvent } from '../../../src/vss/consumers/event-batch.js';
import { MAX_REALTIME_ENTRIES, parseRealtimeEvent } from '../../../src/vss/consumers/realtime-event.js';

const bytes = (event: unknown) =>
  event instanceof Uint8Array
    ? event
    : new TextEncoder().encode(typeof event === 'string' ? event : JSON.stringify(event));
const parse = (event: unknown) => parseRealtimeEvent(bytes(event));

function rejected(event: unknown, field: string, reason: RegExp): void {
  assert.throws(
    () => parse(event),
    (err: unknown) => {
      assert.ok(err instanceof RejectedEvent, `expected a RejectedEvent, got ${String(err)}`);
      assert.equal(err.field, field, err.message);
      assert.match(err.reason, reason);
      assert.ok(err.reason.includes(field), `the reason names the field: ${err.reason}`);
      return true;
    },
  );
}

const entry = { id: 'c1', label: 'is_live', value: 'true' };
const design = (changes: Record<string, unknown>) => ({
  timestamp: 1_700_000_000_000,
  entity_label: 'catalog',
  data: [entry],
  ...changes,
});

describe('vss real-time event', () => {
  test("the design's shape", () => {
    assert.deepEqual(
      parse({
        timestamp: 1_700_000_000_000,
        entity_label: 'catalog',
        data: [
          { id: 'c1', label: 'is_live', value: 'true' },
          { id: 'c2', label: 'stock', value: 12 },
          { id: 'c2', label: 'on_sale', value: false },
        ],
      }),
      {
        timestamp: 1_700_000_000_000,
        entity: 'catalog',
        data: [
          { id: 'c1', label: 'is_live', value: 'true' },
          { id: 'c2', label: 'stock', value: '12' },
          { id: 'c2', label: 'on_sale', value: 'false' },
        ],
      },
    );
  });

  test("the original system's shape (entity, nested data, type ignored), timestamps as digit strings", () => {
    assert.deepEqual(
      parse({
        timestamp: '1700000000000',
        type: 'catalog_update',
        entity: 'catalog',
        data: [
          { id: 'c1', data: [{ label: 'is_live', value: 'true' }] },
          {
            id: 42,
            data: [
              { label: 'stock', value: '3' },
              { label: 'hidden', value: '0' },
            ],
          },
        ],
      }),
      {
        timestamp: 1_700_000_000_000,
        entity: 'catalog',
        data: [
          { id: 'c1', label: 'is_live', value: 'true' },
          { id: '42', label: 'stock', value: '3' },
          { id: '42', label: 'hidden', value: '0' },
        ],
      },
    );
  });

  test('an event with no data parses (it changes nothing)', () => {
    assert.deepEqual(parse(design({ data: [] })).data, []);
  });

  test('poison events are rejected with reasons naming the field', () => {
    rejected('{"timestamp": 1, "entity_label":', 'payload', /not UTF-8 JSON/);
    rejected(new Uint8Array([0xff, 0xfe, 0x7b, 0x7d]), 'payload', /not UTF-8 JSON/);
    rejected([design({})], 'payload', /JSON object/);
    rejected(design({ timestamp: undefined }), 'timestamp', /is required/);
    rejected(design({ timestamp: -5 }), 'timestamp', /non-negative integer/);
    rejected(design({ timestamp: 1.5 }), 'timestamp', /non-negative integer/);
    rejected(design({ timestamp: '2024-01-01' }), 'timestamp', /non-negative integer/);
    rejected(design({ entity_label: undefined }), 'entity_label', /is required/);
    rejected(design({ entity_label: 'cat/log' }), 'entity_label', /letters, digits/);
    rejected(design({ data: 'c1=true' }), 'data', /must be a list/);
    rejected(design({ data: [{ ...entry, id: '' }] }), 'data[0].id', /non-empty/);
    rejected(design({ data: [entry, { ...entry, id: 'c\u0000' }] }), 'data[1].id', /NUL/);
    rejected(design({ data: [{ ...entry, id: 'x'.repeat(1025) }] }), 'data[0].id', /1024/);
    rejected(design({ data: [{ ...entry, label: 'Is Live' }] }), 'data[0].label', /lower-case name/);
    rejected(
      design({ data: [{ ...entry, label: 'x"; DROP TABLE agg; --' }] }),
      'data[0].label',
      /lower-case/,
    );
    rejected(design({ data: [{ ...entry, label: 'id' }] }), 'data[0].label', /key column/);
    rejected(design({ data: [{ ...entry, label: 'vss_applied_at' }] }), 'data[0].label', /reserved/);
    rejected(design({ data: [{ id: 'c1', label: 'is_live' }] }), 'data[0].value', /is required/);
    rejected(design({ data: [{ ...entry, value: null }] }), 'data[0].value', /string, number or boolean/);
    rejected(
      design({ data: [{ ...entry, value: { nested: 1 } }] }),
      'data[0].value',
      /string, number or boolean/,
    );
    rejected(design({ data: [{ ...entry, value: 'v'.repeat(4097) }] }), 'data[0].value', /4096/);
    rejected(
      design({ data: Array.from({ length: MAX_REALTIME_ENTRIES + 1 }, () => entry) }),
      'data',
      /at most/,
    );
    rejected(
      {
        timestamp: 1,
        entity: 'catalog',
        data: [
          {
            id: 'c1',
            data: [
              { label: 'ok', value: '1' },
              { label: 'Bad', value: '2' },
            ],
          },
        ],
      },
      'data[0].data[1].label',
      /lower-case/,
    );
    rejected({ timestamp: 1, entity: 'catalog', data: [{ id: 'c1' }] }, 'data[0].data', /is required/);
  });
});
