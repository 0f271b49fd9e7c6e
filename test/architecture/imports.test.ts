/**
 * The imports of src/ (one graph, built once for this file's tests):
 * - no cycle: a reader following a value through the code never walks back and forth (issue 37
 *   named the vector engine's collection ↔ indexer ↔ worker-round). import-graph.ts says what an
 *   edge is: type-only imports count (every back edge of that cycle was one); the CLI's lazy
 *   runners' dynamic imports do not.
 * - the layers of layers.ts: nothing reaches up a layer or sideways into another service.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { before, test } from 'node:test';
import { describeCycle, importGraph, stronglyConnected } from './import-graph.js';
import { EMBEDDED, layerOf, layerViolations } from './layers.js';

let graph: Map<string, string[]>;
before(async () => {
  graph = await importGraph(resolve('.'), 'src');
});

test('no file in src/ imports a file that imports it back', () => {
  assert.ok(graph.has('src/cli/main.ts'), `the graph holds src/'s files (${graph.size} files)`);
  assert.ok(graph.has('src/platform/vectordb/embedded/index/indexer.ts'), 'the vector engine is in it');
  const cycles = stronglyConnected(graph);
  assert.equal(
    cycles.length,
    0,
    `import cycles (each line one cycle; break it with an interface or by moving a type down):\n${cycles
      .map((files) => `  ${describeCycle(graph, files)}\n    (files: ${files.join(', ')})`)
      .join('\n')}`,
  );
});

test('a type-only import back is a cycle; a dynamic import is not', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'lattice-import-graph-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const files: Record<string, string> = {
    // The shape issue 37 named: the collection owns its indexer, which names the collection's type.
    'collection.ts':
      "import { Indexer } from './indexer.js';\nexport class Collection { i = new Indexer(); }\n",
    'indexer.ts':
      "import type { Collection } from './collection.js';\nexport class Indexer { c?: Collection; }\n",
    // The CLI's lazy runner: loaded on demand, importing its options' type back.
    'command.ts': "export interface Options { a: number }\nexport const run = () => import('./runner.js');\n",
    'runner.ts': "import { type Options } from './command.js';\nexport const go = (o: Options) => o.a;\n",
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  const graph = await importGraph(root, '.');
  const cycles = stronglyConnected(graph);
  assert.deepEqual(cycles, [['collection.ts', 'indexer.ts']]);
  assert.equal(describeCycle(graph, cycles[0]!), 'collection.ts → indexer.ts → collection.ts');
  assert.deepEqual(graph.get('runner.ts'), ['command.ts']);
});

test('every file of src/ belongs to a layer', () => {
  const homeless = [...graph.keys()].filter((file) => layerOf(file) === undefined);
  assert.deepEqual(homeless, [], 'files outside every layer: add their folder to LAYERS');
});

test('no import reaches up a layer or sideways into another service', () => {
  assert.ok(
    graph.has(`${EMBEDDED}storage/point-store.ts`),
    `the graph holds src/'s files (${graph.size} files)`,
  );
  const violations = layerViolations(graph);
  assert.deepEqual(violations, [], `imports that break the layers:\n  ${violations.join('\n  ')}`);
});

test('the rules catch an import up, sideways and from storage into the index', () => {
  const graph = new Map<string, string[]>([
    ['src/platform/queue/queue.ts', ['src/vss/model/variant.ts']],
    ['src/vss/serving/search.ts', ['src/orchestrator/dag/dag.ts', 'src/platform/errors.ts']],
    [`${EMBEDDED}storage/snapshot.ts`, [`${EMBEDDED}index/hnsw-graph.ts`]],
    [`${EMBEDDED}collection/collection.ts`, [`${EMBEDDED}index/indexer.ts`]],
    ['src/cli/main.ts', ['src/vss/index.ts']],
  ]);
  assert.deepEqual(layerViolations(graph), [
    'src/platform/queue/queue.ts → src/vss/model/variant.ts (platform → vss)',
    `${EMBEDDED}storage/snapshot.ts → ${EMBEDDED}index/hnsw-graph.ts (embedded/storage → embedded/index)`,
    'src/vss/serving/search.ts → src/orchestrator/dag/dag.ts (vss → orchestrator)',
  ]);
});
