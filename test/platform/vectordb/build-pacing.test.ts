/**
 * How the graph build worker gives way to writes (src/platform/vectordb/embedded/index/build-pacing.ts),
 * on a clock the test moves: it defers to writes out of its credit, takes its share once the credit
 * is spent, and earns the credit back by running while no writes arrive.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BuildPacing,
  type BuildPacingOptions,
  type PacingWait,
} from '../../../src/platform/vectordb/embedded/index/build-pacing.js';

const options: BuildPacingOptions = { creditMs: 100, recentMs: 50, writerShare: 2, pollMs: 20 };
const SLICE = 10;

/**
 * One slice's end at `now` on a clock that only the waits move, with the last write at
 * `lastWrite(clock)`: the waits the build takes before it goes on, and the clock then.
 */
function pauseAfterSlice(pacing: BuildPacing, now: number, lastWrite: (clock: number) => number) {
  const waits: PacingWait[] = [];
  let clock = now;
  const wait = (step: PacingWait) => {
    waits.push(step);
    clock += step.ms;
    return true;
  };
  assert.equal(
    pacing.afterSlice(
      SLICE,
      () => clock,
      () => lastWrite(clock),
      wait,
    ),
    true,
  );
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
    // A slice that ends while writes arrive earns nothing: with no credit it takes only its share.
    assert.deepEqual(pauseAfterSlice(pacing, 1_000, always).waits, [{ kind: 'share', ms: SLICE * 2 }]);
    assert.equal(pacing.creditMs, 0);
    const quiet = () => 0;
    for (let i = 0; i < 3; i++) assert.deepEqual(pauseAfterSlice(pacing, 10_000, quiet).waits, []);
    assert.equal(pacing.creditMs, 30);
    for (let i = 0; i < 100; i++) pauseAfterSlice(pacing, 10_000, quiet);
    assert.equal(pacing.creditMs, 100);
  });

  test('a wait ended by a cancel ends the pause, answering false', () => {
    const pacing = new BuildPacing(options);
    const waits: PacingWait[] = [];
    const cancelled = (step: PacingWait) => {
      waits.push(step);
      return false;
    };
    assert.equal(
      pacing.afterSlice(
        SLICE,
        () => 0,
        () => 0,
        cancelled,
      ),
      false,
    );
    assert.deepEqual(waits, [{ kind: 'defer', ms: 20 }]);
  });
});
