/**
 * The `lattice-timings` trailer's value stays within what clients accept as metadata: printable
 * ASCII (a component named in any script is escaped in the JSON) and at most MAX_TIMINGS_BYTES, a
 * DAG too large for it listing its first components and how many it left out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import {
  encodeTimings,
  MAX_TIMINGS_BYTES,
  TIMINGS_KEY,
  timingsAsked,
  timingsOf,
} from '../../../src/orchestrator/wire/timings-trailer.js';

const component = (name: string) => ({
  name,
  kind: 'compute',
  startMs: 1.23456,
  durationMs: 0.5,
  state: 'ran' as const,
});

test('a small DAG whole, its names escaped to ASCII, milliseconds to the microsecond', () => {
  const text = encodeTimings(2.0004999, [component('feature_init'), component('prix_€')]);
  assert.match(text, /^[\x20-\x7e]+$/);
  const trailers = new Metadata();
  trailers.set(TIMINGS_KEY, text);
  assert.deepEqual(timingsOf(trailers), {
    total_ms: 2,
    components: [
      { name: 'feature_init', kind: 'compute', start_ms: 1.235, duration_ms: 0.5, state: 'ran' },
      { name: 'prix_€', kind: 'compute', start_ms: 1.235, duration_ms: 0.5, state: 'ran' },
    ],
  });
  assert.equal(timingsOf(new Metadata()), undefined);
});

test('a DAG too large for the trailer: its first components and how many were left out', () => {
  const names = Array.from({ length: 500 }, (_, i) => `component_number_${i}_ünïcode`);
  const text = encodeTimings(10, names.map(component));
  assert.ok(text.length <= MAX_TIMINGS_BYTES, `${text.length} bytes`);
  assert.match(text, /^[\x20-\x7e]+$/);
  const parsed = JSON.parse(text) as { components: { name: string }[]; omitted: number };
  assert.ok(parsed.components.length > 0);
  assert.equal(parsed.components.length + parsed.omitted, 500);
  assert.deepEqual(
    parsed.components.map((c) => c.name),
    names.slice(0, parsed.components.length),
  );
});

test('which metadata values ask', () => {
  const asks = (value?: string) => {
    const metadata = new Metadata();
    if (value !== undefined) metadata.set(TIMINGS_KEY, value);
    return timingsAsked(metadata);
  };
  assert.deepEqual(['1', 'true', 'TRUE', ' yes ', 'on'].map(asks), [true, true, true, true, true]);
  assert.deepEqual(['0', 'false', '', 'no', undefined].map(asks), [false, false, false, false, false]);
});
