/**
 * Cooperative scheduling shared by every service: long loops give the event loop back every few
 * milliseconds and stop once the caller has gone (time-slice.ts); calls to one endpoint are limited
 * and shared fairly between requests (fair-gate.ts); retry and reconnect loops wait by one exponential
 * backoff (backoff.ts); background work waits until no foreground request runs (idle-gate.ts).
 */
export { Backoff, type BackoffJitter, type BackoffOptions, backoffDelay } from './backoff.js';
export { FairGate, FairGates } from './fair-gate.js';
export { IdleGate } from './idle-gate.js';
export { pause } from './pause.js';
export {
  CHECK_EVERY,
  GIVE_WAY_MAX_MS,
  giveWayToLight,
  inChunks,
  lightCallRunning,
  nextTurn,
  SLICE_MS,
  sliceOver,
  startedSliceOver,
  stopIfOver,
} from './time-slice.js';
