import { LRUCache } from 'lru-cache';
import { type ComponentDependency, normalizeDependency, Topology, type TopologyOptions } from './topology.js';

export interface TopologyCacheOptions {
  /** Distinct DAGs kept (default 256); the least recently used one goes first. */
  readonly maxEntries?: number;
}

interface Remembered {
  readonly root: string | undefined;
  readonly key: string;
  readonly topology: Topology;
}

/**
 * Topologies under the canonical form of their DAG, so identical DAGs (same hash) share one object
 * whatever their key or list order. Config snapshots are immutable and reused for every request, so a
 * dependency object already seen is answered by identity without normalizing it again.
 */
export class TopologyCache {
  private readonly byKey: LRUCache<string, Topology>;
  private byObject = new WeakMap<ComponentDependency, Remembered>();

  constructor(options: TopologyCacheOptions = {}) {
    const max = options.maxEntries ?? 256;
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxEntries must be ≥ 1, got ${max}`);
    this.byKey = new LRUCache({ max });
  }

  /** Distinct topologies held. */
  get size(): number {
    return this.byKey.size;
  }

  /** The shared topology of `dependency`; throws as `Topology.build` does (errors are not cached). */
  get(dependency: ComponentDependency, options?: TopologyOptions): Topology {
    const root = options?.root;
    const known = this.byObject.get(dependency);
    if (known !== undefined && known.root === root) {
      const shared = this.share(known.key, known.topology);
      if (shared !== known.topology)
        this.byObject.set(dependency, { root, key: known.key, topology: shared });
      return shared;
    }
    const graph = normalizeDependency(dependency, options);
    const held = this.byKey.get(graph.key);
    const topology = this.share(graph.key, held ?? Topology.fromNormalized(graph));
    this.byObject.set(dependency, { root, key: graph.key, topology });
    return topology;
  }

  clear(): void {
    this.byKey.clear();
    this.byObject = new WeakMap();
  }

  /** The topology held under `key` (or `candidate`, now held), marked most recently used. */
  private share(key: string, candidate: Topology): Topology {
    const held = this.byKey.get(key);
    if (held !== undefined) return held;
    this.byKey.set(key, candidate);
    return candidate;
  }
}
