/**
 * Where the main thread's time went, from a V8 CPU profile: self time summed by component (the
 * index library, the SQL engine, the queue, …), so a run with BENCH_CPU_PROFILE says in its own
 * output what bounds it. Categories are decided by each function's script URL.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

/** Components by script URL, first match wins. */
const BY_URL: [test: (url: string) => boolean, name: string][] = [
  [(url) => url === 'node:inspector', 'the profiler itself'],
  [(url) => url.includes('/vectordb/embedded/index/hnsw-graph.ts'), 'index library (hnswlib)'],
  [
    (url) => url.includes('@electric-sql/pglite') || url.startsWith('wasm://'),
    'SQL engine (PGlite, JS + wasm)',
  ],
  [(url) => /node_modules\/pg(-[a-z-]+)?\//.test(url), 'PostgreSQL driver (pg)'],
  [(url) => url.includes('/nats') || url.includes('@nats-io'), 'NATS client'],
  [(url) => url.includes('node_modules/zod'), 'event validation (zod)'],
  [(url) => url.includes('/src/platform/queue/'), 'queue adapter'],
  [(url) => url.includes('/src/platform/vectordb/'), 'vector DB (points, payloads, log)'],
  [(url) => url.includes('/src/platform/sql/'), 'SQL adapter'],
  [(url) => url.includes('/src/vss/consumers/'), 'vss consumers (parse, plan, runner)'],
  [(url) => url.includes('/src/vss/store/'), 'vss store (statements, rows)'],
  [(url) => url.includes('node_modules/'), 'other libraries'],
  [(url) => url.includes('/bench/'), 'the bench itself'],
];

const OWN = new Map([
  ['(garbage collector)', 'garbage collection'],
  ['(idle)', 'idle'],
  ['(program)', 'V8 (program)'],
]);

/**
 * Seconds of self time per component, largest first. Native frames (JSON.parse, the index library's
 * C++) and Node's own modules (fs, buffer, crypto) count for the nearest caller of ours or of a
 * library; what has none (the event loop itself) is `node internals`.
 */
export function summarizeProfile(profile: CpuProfile): { category: string; s: number; share: number }[] {
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parent.set(child, node);
  }
  const memo = new Map<number, string>();
  const categoryOf = (node: ProfileNode): string => {
    const known = memo.get(node.id);
    if (known !== undefined) return known;
    const { url, functionName } = node.callFrame;
    let category = OWN.get(functionName);
    if (category === undefined && url !== '') category = BY_URL.find(([test]) => test(url))?.[1];
    // Node's own modules (fs, buffer, crypto, timers) count for whoever called them, like native code.
    if (category === undefined && url !== '' && !url.startsWith('node:')) category = 'other';
    if (category === undefined) {
      const up = parent.get(node.id);
      category = up === undefined ? 'node internals' : categoryOf(up);
    }
    memo.set(node.id, category);
    return category;
  };
  const byNode = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    byNode.set(samples[i]!, (byNode.get(samples[i]!) ?? 0) + (deltas[i] ?? 0));
  }
  const byCategory = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const micros = byNode.get(node.id) ?? 0;
    if (micros === 0) continue;
    const name = categoryOf(node);
    byCategory.set(name, (byCategory.get(name) ?? 0) + micros);
    total += micros;
  }
  return [...byCategory]
    .sort((a, b) => b[1] - a[1])
    .map(([category, micros]) => ({
      category,
      s: Number((micros / 1e6).toFixed(2)),
      share: Number((micros / total).toFixed(3)),
    }));
}
