import { deadlineExceeded, LatticeError } from '../errors.js';

/**
 * Cooperative scheduling for the long loops of a request (keys of 100,000 rows, result writing,
 * batches, large compute), so that one big request neither holds the event loop for seconds nor
 * keeps computing after its caller has gone.
 *
 * A long loop asks `sliceOver()` every `CHECK_EVERY` iterations (`inChunks` does it); once
 * the event loop's current turn has been busy for `SLICE_MS`, it awaits `nextTurn(signal, deadline)`,
 * which gives the loop a turn (timers, I/O and other requests run; waiting loops resume one per turn,
 * round robin) and then throws if the request was cancelled or its deadline passed. Small requests never reach a check, so they pay
 * nothing: no clock read, no macrotask.
 *
 * The slice is the process's, not the request's: what matters is how long the one event loop has gone
 * without a turn, whoever held it. The first check of a turn starts the slice (and schedules one
 * setImmediate that ends it when the loop turns), so work before that first check is not counted:
 * a turn lasts at most `SLICE_MS` plus one check interval.
 */

/** Rows between two checks of a row loop (a chunk of `inChunks`). */
export const CHECK_EVERY = 4096;

/** How long a turn of the event loop may run before a long loop gives it back. */
export const SLICE_MS = 5;

/** performance.now() at the first check of the current turn; -1 when no check ran in this turn. */
let sliceStart = -1;

function endSlice(): void {
  sliceStart = -1;
}

/** Whether the current turn of the event loop has run for `SLICE_MS` (the first call of a turn starts it). */
export function sliceOver(): boolean {
  const now = performance.now();
  if (sliceStart < 0) {
    sliceStart = now;
    setImmediate(endSlice);
    return false;
  }
  return now - sliceStart >= SLICE_MS;
}

/**
 * Like `sliceOver`, but never starts a slice: true only when a long loop of this turn has already
 * started one and it is over. For places that run once per component (the DAG executor), where
 * starting a slice would cost every small request a macrotask.
 */
export function startedSliceOver(): boolean {
  return sliceStart >= 0 && performance.now() - sliceStart >= SLICE_MS;
}

/**
 * Gives the event loop a turn, then throws when the request is over: the signal's reason when it
 * aborted, DEADLINE_EXCEEDED when `deadline` (epoch ms) has passed, even if the timer that would
 * abort the signal has not run yet.
 */
export async function nextTurn(signal: AbortSignal, deadline = Number.POSITIVE_INFINITY): Promise<void> {
  if (lightCalls > 0 && givingWay.has(signal)) await new Promise<void>(waitForLight);
  else await new Promise<void>(waitForTurn);
  stopIfOver(signal, deadline);
}

/**
 * Heavy calls give way to light ones. All services of a process share its event loop (`lattice up`):
 * a small Predict crosses it a dozen times (its own call, then each feature store, model server and
 * compute call over loopback and back), and a turn taken by a large Search between two crossings
 * costs it a query's worth of CPU each time. So while any light call of the process is running, the
 * loops of heavy calls (admission class heavy: `giveWayToLight`) wait for their next turn until no
 * light call runs, or for at most `GIVE_WAY_MAX_MS`, then take turns as before: heavy work slows
 * down while light work is about, and is never stopped.
 */
export const GIVE_WAY_MAX_MS = 50;

const givingWay = new WeakSet<AbortSignal>();
let lightCalls = 0;
const waitingForLight: (() => void)[] = [];
let giveWayTimer: NodeJS.Timeout | undefined;

/** The loops of the call with this signal give way to light calls (see {@link GIVE_WAY_MAX_MS}). */
export function giveWayToLight(signal: AbortSignal): void {
  givingWay.add(signal);
}

/** Counts a light call as running until the returned function is called (once is enough; more are ignored). */
export function lightCallRunning(): () => void {
  lightCalls++;
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    lightCalls--;
    if (lightCalls === 0) endGiveWay();
  };
}

function waitForLight(resolve: () => void): void {
  waitingForLight.push(resolve);
  giveWayTimer ??= setTimeout(endGiveWay, GIVE_WAY_MAX_MS);
}

function endGiveWay(): void {
  clearTimeout(giveWayTimer);
  giveWayTimer = undefined;
  for (const resolve of waitingForLight.splice(0)) waitForTurn(resolve);
}

/**
 * Loops waiting for a turn, in the order they gave theirs back; one resumes per turn of the event
 * loop. With a setImmediate each, every waiting loop resumed in the same turn and ran at least a chunk
 * before its next check, so a turn lasted a chunk per concurrent heavy request beyond the slice (the
 * load test's small requests waited that long at each of their hops); now a turn holds the slice and
 * one loop's chunk, and the loops take turns round robin.
 */
const waiting: (() => void)[] = [];
let dispatching = false;

function waitForTurn(resolve: () => void): void {
  waiting.push(resolve);
  if (!dispatching) {
    dispatching = true;
    setImmediate(dispatchTurn);
  }
}

function dispatchTurn(): void {
  const next = waiting.shift();
  if (waiting.length > 0) setImmediate(dispatchTurn);
  else dispatching = false;
  next?.();
}

/**
 * Runs `work(from, to)` over the rows `[0, count)` in chunks of `CHECK_EVERY`, in order. Between
 * chunks it stops (throwing) once the request is over and gives the event loop a turn when the time
 * slice is over. Up to `CHECK_EVERY` rows it is one call of `work`, nothing else.
 */
export async function inChunks(
  count: number,
  signal: AbortSignal,
  deadline: number,
  work: (from: number, to: number) => void,
): Promise<void> {
  if (count <= CHECK_EVERY) {
    work(0, count);
    return;
  }
  for (let from = 0; from < count; from += CHECK_EVERY) {
    if (from > 0) {
      if (sliceOver()) await nextTurn(signal, deadline);
      else stopIfOver(signal, deadline);
    }
    work(from, Math.min(count, from + CHECK_EVERY));
  }
}

/** Throws when the request is over (see `nextTurn`); for checks between units of work that need no turn. */
export function stopIfOver(signal: AbortSignal, deadline = Number.POSITIVE_INFINITY): void {
  if (signal.aborted) throw abortError(signal.reason);
  if (deadline <= Date.now()) throw deadlineExceeded('the request deadline passed');
}

function abortError(reason: unknown): unknown {
  if (reason instanceof LatticeError) return reason;
  return new LatticeError('CANCELLED', 'the request was cancelled', { cause: reason });
}
