/**
 * The DAG executor: builds and caches topologies of `component_dependency` and runs components in
 * dependency order with eager scheduling, cancellation and deadlines, and the cooperative time
 * slices (time-slice.ts) that components' long loops share. Knows nothing of features, models or
 * matrices; callers adapt their components to `DagComponent`.
 */
export type {
  ComponentOutcome,
  DagComponent,
  ExecuteOptions,
  ExecutionReport,
} from './dag-executor.js';
export { DagExecutor } from './dag-executor.js';
export {
  CHECK_EVERY,
  inChunks,
  nextTurn,
  SLICE_MS,
  sliceOver,
  startedSliceOver,
  stopIfOver,
} from './time-slice.js';
export type { ComponentDependency, TopologyOptions } from './topology.js';
export { Topology } from './topology.js';
export type { TopologyCacheOptions } from './topology-cache.js';
export { TopologyCache } from './topology-cache.js';
