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
import { NATIVE_ADDON_PATH, nativeExport } from './native-addon.js';

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

/** Where the install step leaves the compiled addon (native-addon.ts). */
export const PARALLEL_BUILDER_PATH = NATIVE_ADDON_PATH;

/** The addon's builder, or undefined (with the reason in {@link parallelBuilderProblem}) when it cannot load. */
export function loadParallelBuilder(path = PARALLEL_BUILDER_PATH): ParallelBuilderConstructor | undefined {
  return nativeExport<ParallelBuilderConstructor>('ParallelBuilder', path).value;
}

/** Why the parallel builder is not available; undefined when it is. */
export function parallelBuilderProblem(path = PARALLEL_BUILDER_PATH): string | undefined {
  return nativeExport<ParallelBuilderConstructor>('ParallelBuilder', path).problem;
}

let warned = false;

/**
 * Says once per process, as a process warning, that large graph builds will run on one thread
 * because the addon does not load (a machine without a C++ toolchain at install), and why.
 */
export function warnIfNoParallelBuilder(): void {
  const problem = parallelBuilderProblem();
  if (problem === undefined || warned) return;
  warned = true;
  process.emitWarning(
    `the embedded vector DB builds its graphs on one thread: the native parallel builder does not load (${problem}); reinstall with a C++ toolchain (python3, make, g++) to use every core`,
  );
}
