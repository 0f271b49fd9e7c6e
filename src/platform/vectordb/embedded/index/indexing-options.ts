import type { IndexTarget } from './index-target.js';

/**
 * How a collection's graph is built, shared by the indexer and its worker rounds. `T` is the target's
 * own type, so `onBuilt` hands the caller back the collection it knows rather than an IndexTarget.
 */
export interface IndexingOptions<T extends IndexTarget = IndexTarget> {
  /** Longest time the indexer holds the event loop in one go, ms. */
  sliceMs: number;
  /** A backlog of at least this many rows is built on the worker thread; Infinity never. */
  workerRows: number;
  /** Directory for the graph files handed to and from the worker (the OS's temp dir without). */
  scratchDir: string | undefined;
  /** Large worker rounds on several threads (graph-builder.ts, BuildRequest.parallel); undefined never. */
  parallel: { minRows: number; threads: number } | undefined;
  /** Called when the indexer goes idle with a graph that changed since it last called (a build ended). */
  onBuilt?: (collection: T) => void;
}
