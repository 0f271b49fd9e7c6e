/**
 * The DAG executor: builds and caches topologies of `component_dependency` and runs components in
 * dependency order with eager scheduling, cancellation and deadlines,, yielding between components
 * once a long loop's time slice (platform/scheduling) is over. Knows nothing of features, models or
 * matrices; callers adapt their components to `DagComponent`.
 */
export type {
  ComponentOutcome,
  DagComponent,
  ExecuteOptions,
  ExecutionReport,
} from './dag-executor.js';
export { DagExecutor } from './dag-executor.js';
export type { ComponentRunState, ComponentTiming } from './execution-timeline.js';
export { ExecutionTimeline } from './execution-timeline.js';
export type { ComponentDependency, TopologyOptions } from './topology.js';
export { Topology } from './topology.js';
export type { TopologyCacheOptions } from './topology-cache.js';
export { TopologyCache } from './topology-cache.js';
