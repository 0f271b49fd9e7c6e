/**
 * The console's live numbers: calls, errors and latency quantiles over the last minute, per model and
 * component, on a clock the test moves (so no timing is asserted, and a minute passes at once).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ModelTraffic } from '../../../src/orchestrator/traffic/model-traffic.js';
import { SlidingWindow } from '../../../src/orchestrator/traffic/sliding-window.js';

test('a window counts the calls and errors of the last 60 seconds and gives quantiles within the bucket width', () => {
  let now = 1_000_000;
  const window = new SlidingWindow(() => now);
  for (let i = 1; i <= 100; i++) window.record(i, i % 10 === 0);
  let summary = window.summary();
  assert.equal(summary.calls, 100);
  assert.equal(summary.errors, 10);
  assert.ok(Math.abs(summary.p50Ms! - 50) / 50 < 0.04, String(summary.p50Ms));
  assert.ok(Math.abs(summary.p99Ms! - 99) / 99 < 0.04, String(summary.p99Ms));

  now += 30_000;
  window.record(1000, false);
  summary = window.summary();
  assert.equal(summary.calls, 101, 'half a minute later both seconds count');

  now += 30_000;
  summary = window.summary();
  assert.equal(summary.calls, 1, 'a minute after the first calls, only the later one is left');
  assert.ok(Math.abs(summary.p50Ms! - 1000) / 1000 < 0.04);

  now += 60_000;
  assert.deepEqual(window.summary(), { calls: 0, errors: 0, p50Ms: undefined, p99Ms: undefined });
});

test('a slot reused a minute later starts from zero', () => {
  let now = 5_000;
  const window = new SlidingWindow(() => now);
  window.record(2, true);
  now += 60_000; // the same slot, a minute on
  window.record(3, false);
  assert.deepEqual(
    { ...window.summary(), p50Ms: undefined, p99Ms: undefined },
    { calls: 1, errors: 0, p50Ms: undefined, p99Ms: undefined },
  );
});

test('rates per model and component over the window; models and components without traffic show zeros', () => {
  let now = 0;
  const traffic = new ModelTraffic(() => now);
  now += 10_000;
  const requests = traffic.requests('m');
  const ranker = traffic.component('m', 'ranker', 'model');
  for (let i = 0; i < 20; i++) {
    requests.record(5, i < 5);
    ranker.record(2, false);
  }
  const stats = traffic.stats([
    {
      id: 'm',
      components: [
        { name: 'ranker', kind: 'model' },
        { name: 'blend', kind: 'compute' },
      ],
    },
    { id: 'idle', components: [] },
  ]);
  assert.equal(stats.window_s, 10, 'since the start, when shorter than a minute');
  const [m, idle] = stats.models;
  assert.equal(m!.requests_per_s, 2);
  assert.equal(m!.errors_per_s, 0.5);
  assert.equal(m!.error_rate, 0.25);
  assert.equal(m!.components[0]!.requests_per_s, 2);
  assert.equal(m!.components[0]!.error_rate, 0);
  assert.ok(m!.components[0]!.p50_ms! > 1.9 && m!.components[0]!.p50_ms! < 2.1);
  assert.deepEqual(m!.components[1], {
    name: 'blend',
    kind: 'compute',
    requests_per_s: 0,
    errors_per_s: 0,
    error_rate: 0,
  });
  assert.deepEqual(idle, {
    model_config_id: 'idle',
    requests_per_s: 0,
    errors_per_s: 0,
    error_rate: 0,
    components: [],
  });
  now += 120_000;
  assert.equal(traffic.stats().window_s, 60);
});
