/**
 * The native parallel graph builder (native/hnsw-parallel, compiled by `npm ci` / the package's
 * install step with node-gyp, native/hnsw-parallel/build.mjs): inserts a large batch into an hnswlib graph from several threads at
 * once, reading and writing the graph file hnswlib-node uses. hnswlib-node itself calls hnswlib from
 * one JavaScript thread only, so without it a backlog is indexed on one core even when the other is
 * idle (bench/RESULTS.md, "vss-ingest": after an ingestion the build of its 100,000 points was the raw
 * library's single-threaded build time, on a 2-core machine whose second core sat idle).
 *
 * Optional: a machine without a C++ toolchain installs Lattice without it, and graph builds then run
 * on the one worker thread as before. {@link loadParallelBuilder} says which.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot } from '../../package-root.js';

/** One graph being built (hnswlib's HierarchicalNSW, owned by the addon). */
export interface ParallelGraph {
  /**
   * Inserts label `labels[i]` with vector i (`dimension` floats at i × dimension) for every i, on
   * `threads` threads (this one included), until `cancel[0]` is not 0; returns how many were inserted.
   * A label already in the graph is moved to its new vector and undeleted, as hnswlib-node's
   * addPoint does.
   */
  add(vectors: Float32Array, labels: Uint32Array, threads: number, cancel: Int32Array): number;
  /** Writes the graph in hnswlib's format (HnswGraph.load / loadAsync read it). */
  save(path: string): void;
  count(): number;
  /** Frees the graph at once (the collector does not see its native memory); the object is unusable after. */
  release(): void;
}

export interface ParallelBuilderConstructor {
  /** A new empty graph, or the one in `baseFile` with room for `capacity` nodes. */
  new (
    space: 'l2' | 'ip' | 'cosine',
    dimension: number,
    capacity: number,
    m: number,
    efConstruction: number,
    seed: number,
    baseFile?: string,
  ): ParallelGraph;
}

/** Where the install step leaves the compiled addon. */
export const PARALLEL_BUILDER_PATH = join(
  packageRoot,
  'native/hnsw-parallel/build/Release/hnsw_parallel.node',
);

let loaded: { builder: ParallelBuilderConstructor | undefined; problem: string | undefined } | undefined;

/** The addon's builder, or undefined (with the reason in {@link parallelBuilderProblem}) when it cannot load. */
export function loadParallelBuilder(): ParallelBuilderConstructor | undefined {
  if (loaded === undefined) {
    if (!existsSync(PARALLEL_BUILDER_PATH)) {
      loaded = {
        builder: undefined,
        problem: `${PARALLEL_BUILDER_PATH} is not there (not compiled at install)`,
      };
    } else {
      try {
        const addon = createRequire(import.meta.url)(PARALLEL_BUILDER_PATH) as {
          ParallelBuilder: ParallelBuilderConstructor;
        };
        loaded = { builder: addon.ParallelBuilder, problem: undefined };
      } catch (err) {
        loaded = { builder: undefined, problem: err instanceof Error ? err.message : String(err) };
      }
    }
  }
  return loaded.builder;
}

/** Why the parallel builder is not available; undefined when it is. */
export function parallelBuilderProblem(): string | undefined {
  loadParallelBuilder();
  return loaded?.problem;
}
