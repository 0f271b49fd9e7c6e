/**
 * How the graph build worker gives way to writes (src/platform/vectordb/embedded/build-pacing.ts),
 * on a clock the test moves: it defers to writes out of its credit, takes its share once the credit
 * is spent, and earns the credit back by running while no writes arrive.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BuildPacing,
  type BuildPacingOptions,
} from '../../../src/platform/vectordb/embedded/build-pacing.js';

const options: BuildPacingOptions = { creditMs: 100, recentMs: 50, writerShare: 2, pollMs: 20 };
const SLICE = 10;

/**
 * The worker's loop after one slice that ends at `now` (graph-build-worker.ts), with the last write
 * at `lastWrite(clock)`: the waits it takes before it goes on, and the clock then.
 */
function pauseAfterSlice(pacing: BuildPacing, now: number, lastWrite: (clock: number) => number) {
  const waits: { kind: string; ms: number }[] = [];
  pacing.ran(SLICE, now, lastWrite(now));
  let waited = 0;
  let clock = now;
  for (;;) {
    const step = pacing.next(clock, lastWrite(clock), SLICE, waited);
    if (step.kind === 'go') break;
    waits.push(step);
    clock += step.ms;
    if (step.kind === 'share') break;
    waited = step.ms;
  }
  return { waits, clock };
}

/** Writes at every moment. */
const always = (clock: number) => clock;

describe('graph build pacing', () => {
  test('with no writes arriving the build goes on after every slice', () => {
    const pacing = new BuildPacing(options);
    assert.deepEqual(pauseAfterSlice(pacing, 1_000, () => 0).waits, []);
    assert.equal(pacing.creditMs, 100);
  });

  test('while writes arrive the build defers to them until they stop, paid from its credit', () => {
    const pacing = new BuildPacing(options);
    // Writes arrive until t=1040, then stop: they count as arriving until 1090.
    const { waits, clock } = pauseAfterSlice(pacing, 1_000, (c) => Math.min(c, 1_040));
    assert.deepEqual(waits, Array(5).fill({ kind: 'defer', ms: 20 }));
    assert.equal(clock, 1_100, 'went on at the first look after the writes stopped');
    assert.equal(pacing.creditMs, 0, 'the five waits were paid from the credit');
  });

  test('once the credit is spent, writes that never stop leave the build its share', () => {
    const pacing = new BuildPacing(options);
    let now = 0;
    let deferred = 0;
    const shares: number[] = [];
    for (let slice = 0; slice < 10; slice++) {
      const { waits, clock } = pauseAfterSlice(pacing, now, always);
      for (const w of waits) {
        if (w.kind === 'defer') deferred += w.ms;
        else shares.push(w.ms);
      }
      now = clock + SLICE;
    }
    assert.equal(deferred, 100, 'deferred exactly its credit');
    assert.deepEqual(shares, Array(10).fill(SLICE * 2), 'then every slice waits twice its length');
    assert.equal(pacing.creditMs, 0);
  });

  test('running while no writes arrive earns the credit back, up to the whole of it', () => {
    const pacing = new BuildPacing(options);
    pauseAfterSlice(pacing, 0, always);
    assert.equal(pacing.creditMs, 0);
    for (let i = 0; i < 3; i++) pacing.ran(SLICE, 10_000, 0);
    assert.equal(pacing.creditMs, 30);
    for (let i = 0; i < 100; i++) pacing.ran(SLICE, 10_000, 0);
    assert.equal(pacing.creditMs, 100);
    // A slice that ends while writes arrive earns nothing.
    pauseAfterSlice(pacing, 20_000, always);
    pacing.ran(SLICE, 30_000, 30_000 - 1);
    assert.equal(pacing.creditMs, 0);
  });
});
