/**
 * No import cycle among the files of src/: a reader following a value through the code never walks
 * back and forth, and each layer can be read without the ones above it (issue 37 named the vector
 * engine's collection ↔ indexer ↔ worker-round). import-graph.ts says what an edge is: type-only
 * imports count (every back edge of that cycle was one); the CLI's lazy runners' dynamic imports do not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { describeCycle, importGraph, stronglyConnected } from './import-graph.js';

test('no file in src/ imports a file that imports it back', async () => {
  const graph = await importGraph(resolve('.'), 'src');
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
