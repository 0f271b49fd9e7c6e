/**
 * What the indexer and its worker rounds need of a collection, and all they may touch: its points,
 * its backlog of rows waiting for the graph, and the serving graph they replace. The collection
 * implements it (collection/collection.ts); the index layer never imports the collection, so the
 * collection can own its indexer without an import cycle.
 */
import type { ValidatedSpec } from '../../validation.js';
import type { PointStore } from '../storage/point-store.js';
import type { HnswGraph } from './hnsw-graph.js';

export interface IndexTarget {
  readonly name: string;
  readonly spec: ValidatedSpec;
  readonly store: PointStore;
  /** The serving graph; setting it swaps in a graph built elsewhere (a compaction, a worker build). */
  graph: HnswGraph;
  /** Bumped whenever the graph gains rows or is swapped. */
  readonly graphVersion: number;
  /** Rows waiting in the backlog. */
  readonly pendingCount: number;
  /** The next row to insert, or undefined when the backlog is empty. */
  nextPending(): number | undefined;
  /** Inserts a pending row into the serving graph. */
  index(row: number): void;
  /** A pending row the graph now holds with its current vector (a worker build put it there). */
  markIndexed(row: number): void;
  /** Empties the backlog into a list; the rows stay pending until marked indexed or requeued. */
  takeBacklog(): Uint32Array;
  /** Puts rows taken by {@link takeBacklog} back at the head of the backlog. */
  requeue(rows: ArrayLike<number>): void;
}
