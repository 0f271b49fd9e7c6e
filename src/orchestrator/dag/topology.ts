import { createHash } from 'node:crypto';
import { invalidArgument } from '../../platform/errors.js';

/** component → the components that run after it (the design's direction). */
export type ComponentDependency = Readonly<Record<string, readonly string[]>>;

export interface TopologyOptions {
  /** An implicit node (e.g. `feature_init`) that precedes every node nobody lists as a successor. */
  readonly root?: string;
}

/**
 * The graph reduced to what identifies it: node names sorted, duplicate edges dropped, implicit
 * root edges made explicit. Two dependency documents describe the same DAG exactly when their keys
 * are equal, whatever their key order or successor-list order.
 */
export interface NormalizedDependency {
  /** Every node, sorted by UTF-16 code units (locale-independent). */
  readonly names: readonly string[];
  /** Per entry of `names`: indexes of its successors into `names`, ascending, without duplicates. */
  readonly successors: readonly (readonly number[])[];
  /** Per entry of `names`: how many nodes list it. */
  readonly inDegrees: Int32Array;
  /** Canonical text of the graph: the cache key and the input of `Topology.hash`. */
  readonly key: string;
}

const FIELD = 'component_dependency';

export function normalizeDependency(
  dependency: ComponentDependency,
  options?: TopologyOptions,
): NormalizedDependency {
  const keys = Object.keys(dependency);
  if (keys.length === 0) {
    throw invalidArgument(`${FIELD} is empty: a model needs at least one component`, FIELD);
  }
  const seen = new Set<string>(keys);
  for (const key of keys) for (const successor of dependency[key]!) seen.add(successor);
  const root = options?.root;
  if (root !== undefined) seen.add(root);
  const names = [...seen].sort();
  const indexOf = new Map<string, number>();
  for (let i = 0; i < names.length; i++) indexOf.set(names[i]!, i);

  const successors: number[][] = names.map(() => []);
  const inDegrees = new Int32Array(names.length);
  for (const key of keys) {
    const out = successors[indexOf.get(key)!]!;
    for (const name of dependency[key]!) {
      const to = indexOf.get(name)!;
      if (out.includes(to)) continue;
      out.push(to);
      inDegrees[to]!++;
    }
  }
  if (root !== undefined) {
    const r = indexOf.get(root)!;
    for (let i = 0; i < names.length; i++) {
      if (i === r || inDegrees[i] !== 0) continue;
      successors[r]!.push(i);
      inDegrees[i] = 1;
    }
  }
  for (const out of successors) out.sort((a, b) => a - b);
  const key = JSON.stringify(names.map((name, i) => [name, successors[i]]));
  return { names, successors, inDegrees, key };
}

/**
 * A validated DAG laid out for the executor: nodes in one topological order, successors in
 * compressed-row form over typed arrays, so an execution copies one Int32Array and allocates no maps.
 * Immutable by contract: it is shared by every model whose DAG has the same hash.
 */
export class Topology {
  /** 128-bit hex digest of the canonical graph: independent of key order and successor-list order. */
  readonly hash: string;
  /** Node names in one valid topological order; a node's index below is its position here. */
  readonly nodes: readonly string[];
  /** Successors of node i are `successorIndices[successorOffsets[i] .. successorOffsets[i + 1])`. */
  readonly successorOffsets: Int32Array;
  readonly successorIndices: Int32Array;
  /** Per node: how many predecessors must finish before it may start. Copy before decrementing. */
  readonly inDegrees: Int32Array;
  /** Nodes with no predecessor, in `nodes` order. */
  readonly roots: Int32Array;
  private readonly positions: ReadonlyMap<string, number>;

  private constructor(
    hash: string,
    nodes: readonly string[],
    successorOffsets: Int32Array,
    successorIndices: Int32Array,
    inDegrees: Int32Array,
    roots: Int32Array,
  ) {
    this.hash = hash;
    this.nodes = Object.freeze(nodes);
    this.successorOffsets = successorOffsets;
    this.successorIndices = successorIndices;
    this.inDegrees = inDegrees;
    this.roots = roots;
    this.positions = new Map(nodes.map((name, i) => [name, i]));
  }

  /**
   * Builds with Kahn's in-degree analysis. Nodes = keys ∪ every listed successor (∪ `root`).
   * Rejects with INVALID_ARGUMENT an empty DAG, or a cycle: the message shows its path
   * ("a → b → c → a") and the field is `component_dependency.<first node of the cycle>`.
   */
  static build(dependency: ComponentDependency, options?: TopologyOptions): Topology {
    return Topology.fromNormalized(normalizeDependency(dependency, options));
  }

  /** For `TopologyCache`, which normalizes first to look the DAG up: `graph` is `normalizeDependency`'s. */
  static fromNormalized(graph: NormalizedDependency): Topology {
    const { names, successors, inDegrees } = graph;
    const n = names.length;
    const remaining = inDegrees.slice();
    const order = new Int32Array(n);
    let tail = 0;
    for (let i = 0; i < n; i++) if (remaining[i] === 0) order[tail++] = i;
    for (let head = 0; head < tail; head++) {
      for (const j of successors[order[head]!]!) if (--remaining[j]! === 0) order[tail++] = j;
    }
    if (tail < n) throw cycleError(graph, remaining);

    const position = new Int32Array(n);
    for (let p = 0; p < n; p++) position[order[p]!] = p;
    const nodes: string[] = new Array(n);
    const offsets = new Int32Array(n + 1);
    const indices = new Int32Array(successors.reduce((sum, out) => sum + out.length, 0));
    const degrees = new Int32Array(n);
    let roots = 0;
    let edge = 0;
    for (let p = 0; p < n; p++) {
      const original = order[p]!;
      nodes[p] = names[original]!;
      degrees[p] = inDegrees[original]!;
      if (degrees[p] === 0) roots++;
      offsets[p] = edge;
      const out = successors[original]!.map((j) => position[j]!).sort((a, b) => a - b);
      for (const q of out) indices[edge++] = q;
    }
    offsets[n] = edge;
    const rootIndices = new Int32Array(roots);
    for (let p = 0, r = 0; p < n; p++) if (degrees[p] === 0) rootIndices[r++] = p;

    const hash = createHash('sha256').update(graph.key).digest('hex').slice(0, 32);
    return new Topology(hash, nodes, offsets, indices, degrees, rootIndices);
  }

  get size(): number {
    return this.nodes.length;
  }

  /** The node's index in `nodes`, or -1 when the DAG does not contain it. */
  indexOf(name: string): number {
    return this.positions.get(name) ?? -1;
  }

  /** The names of the nodes that run after `name` (empty for an unknown name). */
  successorsOf(name: string): string[] {
    const i = this.indexOf(name);
    if (i < 0) return [];
    const out: string[] = [];
    for (let k = this.successorOffsets[i]!; k < this.successorOffsets[i + 1]!; k++) {
      out.push(this.nodes[this.successorIndices[k]!]!);
    }
    return out;
  }
}

/**
 * After Kahn's pass, every node left over still waits on a left-over predecessor, so walking
 * predecessors from any of them must close a cycle. Deterministic: the smallest names win.
 */
function cycleError(graph: NormalizedDependency, remaining: Int32Array) {
  const { names, successors } = graph;
  const n = names.length;
  const predecessor = new Int32Array(n).fill(-1);
  for (let i = n - 1; i >= 0; i--) {
    if (remaining[i] === 0) continue;
    for (const j of successors[i]!) if (remaining[j] !== 0) predecessor[j] = i;
  }
  let start = 0;
  while (remaining[start] === 0) start++;
  const step = new Int32Array(n).fill(-1);
  const walk: number[] = [];
  let cur = start;
  while (step[cur] === -1) {
    step[cur] = walk.length;
    walk.push(cur);
    cur = predecessor[cur]!;
  }
  // `walk` goes against the edges; the cycle in edge direction is its tail reversed.
  const cycle = walk.slice(step[cur]!).reverse();
  let first = 0;
  for (let k = 1; k < cycle.length; k++) if (cycle[k]! < cycle[first]!) first = k;
  const path = [...cycle.slice(first), ...cycle.slice(0, first), cycle[first]!].map((i) => names[i]!);
  return invalidArgument(`${FIELD} has a cycle: ${path.join(' → ')}`, `${FIELD}.${path[0]}`);
}
