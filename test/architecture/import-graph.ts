/**
 * The import graph of a folder's TypeScript files, as esbuild resolves it, and the cycles in it.
 *
 * An edge is a static import or re-export, type-only ones included: a type import is still one file
 * knowing another, and the cycle issue 37 named (collection ↔ indexer ↔ worker-round) ran through
 * `import type` lines that esbuild would otherwise erase. So every file is read with its `import
 * type` / `export type {…}` lines made plain and compiled under `verbatimModuleSyntax`, which keeps
 * every import, inline `type` specifiers included.
 *
 * A dynamic `import()` is no edge: it is how a cheap module loads a heavy one on demand (the CLI's
 * `*.command.ts` and their runners, whose options' types the runners import back).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build, type Plugin } from 'esbuild';

/** Type-only import and re-export statements, written as plain ones (the rest of the line kept). */
const TYPE_ONLY = /^(\s*)(import|export)\s+type(?=\s*[{*]|\s+[\w$]+\s+from\s)/gm;

const keepTypeImports: Plugin = {
  name: 'keep-type-imports',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, ({ path }) => ({
      loader: 'ts',
      contents: readFileSync(path, 'utf8').replace(TYPE_ONLY, '$1$2'),
    }));
  },
};

function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** File → the files it imports, paths relative to `root` with `/`; packages are left out. */
export async function importGraph(root: string, folder: string): Promise<Map<string, string[]>> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: typeScriptFiles(join(root, folder)).map((file) => relative(root, file)),
    bundle: true,
    write: false,
    metafile: true,
    outdir: 'import-graph', // required with several entry points; nothing is written
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
    plugins: [keepTypeImports],
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
  });
  const graph = new Map<string, string[]>();
  for (const [file, input] of Object.entries(result.metafile.inputs)) {
    const imports = input.imports.filter((edge) => !edge.external && edge.kind === 'import-statement');
    graph.set(
      file,
      imports.map((edge) => edge.path),
    );
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan's algorithm), each sorted. */
export function stronglyConnected(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, order.get(next)!));
      }
    }
    if (low.get(file) !== order.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) components.push(component.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return components;
}

/** One cycle through a component's first file, as `a → b → … → a` (shortest, breadth first). */
export function describeCycle(graph: ReadonlyMap<string, readonly string[]>, component: string[]): string {
  const members = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const file = queue[i]!;
    for (const next of graph.get(file) ?? []) {
      if (!members.has(next) || cameFrom.has(next)) continue;
      cameFrom.set(next, file);
      if (next === start) {
        const path = [start];
        for (let at = file; at !== start; at = cameFrom.get(at)!) path.unshift(at);
        path.unshift(start);
        return path.join(' → ');
      }
      queue.push(next);
    }
  }
  return component.join(', ');
}
