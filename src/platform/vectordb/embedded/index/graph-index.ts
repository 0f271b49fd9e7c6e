/**
 * The hnswlib index under a collection's graph (hnsw-graph.ts), on one of two engines that read and
 * write the same files and give the same graph for the same inserts and the same answer to the
 * same search:
 * - `native`: the addon's HnswIndex (native/hnsw-parallel/src/hnsw_index.cc). Its
 *   {@link GraphIndex.searchAsync} runs on a pool of threads, one per core, so a process serving
 *   many searches at once uses every core rather than one (issue 38); the filter is a bitset the
 *   walk reads natively.
 * - `hnswlib-node`: the library the engine served from before, when the addon is not installed (no
 *   C++ toolchain at install): every search runs on the event loop, the filter is a JavaScript
 *   callback per node the walk reaches.
 */
import { availableParallelism } from 'node:os';
import hnswlib from 'hnswlib-node';
import { NATIVE_ADDON_PATH, nativeExport } from './native-addon.js';

export type GraphEngine = 'native' | 'hnswlib-node';

export type GraphSpace = 'l2' | 'ip' | 'cosine';

export interface GraphHits {
  /** Labels (row numbers), nearest first. */
  rows: ArrayLike<number>;
  /** hnswlib distances: 1 − dot (ip), 1 − cosine (cosine), squared L2 (l2). */
  distances: ArrayLike<number>;
}

export interface GraphIndex {
  readonly engine: GraphEngine;
  /** Nodes the index has room for. */
  capacity(): number;
  /** Nodes in the index, deleted ones included. */
  count(): number;
  resize(capacity: number): void;
  /** Inserts `label`, or moves it to `vector` and undeletes it when the index has it. */
  add(vector: Float32Array, label: number): void;
  markDelete(label: number): void;
  /**
   * The `k` nearest non-deleted labels, walking with candidate list `ef` (at least k); with
   * `filter` (bit label % 32 of word label / 32), only labels whose bit is set.
   */
  search(query: Float32Array, k: number, ef: number, filter?: Uint32Array): GraphHits;
  /**
   * {@link search} off the event loop where the engine can (native); the index may be changed or
   * dropped meanwhile, the filter's words changed: the search works on copies and its own reference.
   */
  searchAsync(query: Float32Array, k: number, ef: number, filter?: Uint32Array): Promise<GraphHits>;
  save(path: string): void;
}

/** The addon's HnswIndex (hnsw_index.cc). */
interface NativeIndex {
  init(capacity: number, m: number, efConstruction: number, seed: number): void;
  readSync(path: string): void;
  read(path: string): Promise<void>;
  save(path: string): void;
  resize(capacity: number): void;
  capacity(): number;
  count(): number;
  add(vector: Float32Array, label: number): void;
  markDelete(label: number): void;
  search(query: Float32Array, k: number, ef: number, filter?: Uint32Array): NativeHits;
  searchAsync(query: Float32Array, k: number, ef: number, filter?: Uint32Array): Promise<NativeHits>;
}

interface NativeHits {
  labels: Uint32Array;
  distances: Float32Array;
}

type NativeIndexConstructor = new (space: GraphSpace, dimension: number) => NativeIndex;

/** The addon's HnswIndex class, or why there is none. */
function nativeClass(path = NATIVE_ADDON_PATH) {
  return nativeExport<NativeIndexConstructor>('HnswIndex', path);
}

/** The addon's class (its search pool sized, with the default size if nothing sized it before). */
function nativeIndexClass(): NativeIndexConstructor {
  const { value, problem } = nativeClass();
  if (!value) throw new Error(`the native graph does not load: ${problem}`);
  sizeSearchPool();
  return value;
}

/** Threads of the native search pool once sized (0: no addon); undefined before. */
let poolThreads: number | undefined;

/**
 * Sizes the native search pool, once per process (the first call decides: a pool keeps its
 * threads), to `threads` or by default one per core this process may use; returns its size, 0
 * without the addon.
 */
export function sizeSearchPool(threads?: number): number {
  if (poolThreads === undefined) {
    const setThreads = nativeExport<(threads: number) => number>('setSearchThreads').value;
    // availableParallelism, not cpus().length: it follows the CPU affinity a container sets.
    poolThreads = setThreads ? setThreads(threads ?? availableParallelism()) : 0;
  }
  return poolThreads;
}

/** Why the native graph is not available at `path` (the installed addon by default); undefined when it is. */
export function nativeGraphProblem(path?: string): string | undefined {
  return nativeClass(path).problem;
}

/** The engine new and loaded graphs use: native when the addon (at `path`, the installed one by default) loads. */
export function defaultGraphEngine(path?: string): GraphEngine {
  return nativeGraphProblem(path) === undefined ? 'native' : 'hnswlib-node';
}

let warned = false;

/** Says once per process, as a process warning, that searches run on the event loop because the addon does not load. */
export function warnIfNoNativeGraph(): void {
  const problem = nativeGraphProblem();
  if (problem === undefined || warned) return;
  warned = true;
  process.emitWarning(
    `the embedded vector DB searches its graphs on the event loop, one core for all searches: the native graph does not load (${problem}); reinstall with a C++ toolchain (python3, make, g++) to search on every core`,
  );
}

class NativeGraphIndex implements GraphIndex {
  readonly engine = 'native';

  constructor(private readonly index: NativeIndex) {}

  capacity(): number {
    return this.index.capacity();
  }

  count(): number {
    return this.index.count();
  }

  resize(capacity: number): void {
    this.index.resize(capacity);
  }

  add(vector: Float32Array, label: number): void {
    this.index.add(vector, label);
  }

  markDelete(label: number): void {
    this.index.markDelete(label);
  }

  search(query: Float32Array, k: number, ef: number, filter?: Uint32Array): GraphHits {
    const { labels, distances } = this.index.search(query, k, ef, filter);
    return { rows: labels, distances };
  }

  async searchAsync(query: Float32Array, k: number, ef: number, filter?: Uint32Array): Promise<GraphHits> {
    const { labels, distances } = await this.index.searchAsync(query, k, ef, filter);
    return { rows: labels, distances };
  }

  save(path: string): void {
    this.index.save(path);
  }
}

class HnswlibNodeIndex implements GraphIndex {
  readonly engine = 'hnswlib-node';

  constructor(private readonly index: hnswlib.HierarchicalNSW) {}

  capacity(): number {
    return this.index.getMaxElements();
  }

  count(): number {
    return this.index.getCurrentCount();
  }

  resize(capacity: number): void {
    this.index.resizeIndex(capacity);
  }

  add(vector: Float32Array, label: number): void {
    this.index.addPoint(Array.from(vector), label);
  }

  markDelete(label: number): void {
    this.index.markDelete(label);
  }

  search(query: Float32Array, k: number, ef: number, filter?: Uint32Array): GraphHits {
    // hnswlib-node searches with the index's ef: set per call, which is safe on one thread.
    this.index.setEf(Math.max(ef, k));
    const accept = filter
      ? (label: number) => ((filter[label >>> 5] ?? 0) & (1 << (label & 31))) !== 0
      : undefined;
    const found = this.index.searchKnn(Array.from(query), k, accept);
    return { rows: found.neighbors, distances: found.distances };
  }

  async searchAsync(query: Float32Array, k: number, ef: number, filter?: Uint32Array): Promise<GraphHits> {
    return this.search(query, k, ef, filter);
  }

  save(path: string): void {
    this.index.writeIndexSync(path);
  }
}

/** A new empty index with room for `capacity` nodes. */
export function createGraphIndex(
  engine: GraphEngine,
  space: GraphSpace,
  dimension: number,
  capacity: number,
  m: number,
  efConstruction: number,
  seed: number,
): GraphIndex {
  if (engine === 'native') {
    const index = new (nativeIndexClass())(space, dimension);
    index.init(capacity, m, efConstruction, seed);
    return new NativeGraphIndex(index);
  }
  const index = new hnswlib.HierarchicalNSW(space, dimension);
  index.initIndex(capacity, m, efConstruction, seed, false);
  return new HnswlibNodeIndex(index);
}

/** The index in the file at `path` (either engine's: the format is hnswlib's). */
export function readGraphIndex(
  engine: GraphEngine,
  space: GraphSpace,
  dimension: number,
  path: string,
): GraphIndex {
  if (engine === 'native') {
    const index = new (nativeIndexClass())(space, dimension);
    index.readSync(path);
    return new NativeGraphIndex(index);
  }
  const index = new hnswlib.HierarchicalNSW(space, dimension);
  index.readIndexSync(path, false);
  return new HnswlibNodeIndex(index);
}

/** {@link readGraphIndex} with the file read on libuv's thread pool, into an index nothing else holds yet. */
export async function readGraphIndexAsync(
  engine: GraphEngine,
  space: GraphSpace,
  dimension: number,
  path: string,
): Promise<GraphIndex> {
  if (engine === 'native') {
    const index = new (nativeIndexClass())(space, dimension);
    await index.read(path);
    return new NativeGraphIndex(index);
  }
  const index = new hnswlib.HierarchicalNSW(space, dimension);
  await index.readIndex(path, false);
  return new HnswlibNodeIndex(index);
}
