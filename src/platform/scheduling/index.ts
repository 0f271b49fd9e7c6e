/**
 * Cooperative scheduling shared by every service's long loops (time-slice.ts): give the event loop
 * back every few milliseconds and stop once the caller has gone.
 */
export {
  CHECK_EVERY,
  inChunks,
  nextTurn,
  SLICE_MS,
  sliceOver,
  startedSliceOver,
  stopIfOver,
} from './time-slice.js';
