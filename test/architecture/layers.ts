/**
 * The layers of src/, as engineering.md draws them: platform ports and adapters at the bottom,
 * shared kernels (data types, the compute expression language) on them, the services and the
 * reference servers above, the CLI on top. Nothing reaches up, and nothing reaches sideways into
 * another service's or server's internals. Inside the embedded vector engine the same holds for its
 * three folders: storage/ below index/ below collection/ (issue 37: a reader of a lower layer never
 * needs the one above it).
 *
 * Each rule names a group of files and the groups it may import; a file's group is the first rule
 * whose prefix it starts with, so the more specific prefixes come first.
 */

interface Layer {
  name: string;
  prefix: string;
  /** Groups this one may import besides itself. */
  mayImport: readonly string[];
}

export const EMBEDDED = 'src/platform/vectordb/embedded/';
const KERNELS = ['gen', 'datatypes', 'compute'];

const LAYERS: readonly Layer[] = [
  { name: 'embedded/storage', prefix: `${EMBEDDED}storage/`, mayImport: ['platform'] },
  { name: 'embedded/index', prefix: `${EMBEDDED}index/`, mayImport: ['platform', 'embedded/storage'] },
  {
    name: 'embedded/collection',
    prefix: `${EMBEDDED}collection/`,
    mayImport: ['platform', 'embedded/storage', 'embedded/index'],
  },
  // The composition root and the vectordb barrel open the embedded engine's adapter.
  { name: 'platform', prefix: 'src/platform/', mayImport: ['embedded/collection'] },
  { name: 'gen', prefix: 'src/gen/', mayImport: [] },
  { name: 'datatypes', prefix: 'src/datatypes/', mayImport: ['platform'] },
  // The reference compute server sits above the expression language it serves.
  { name: 'compute-server', prefix: 'src/compute/server/', mayImport: ['platform', ...KERNELS] },
  { name: 'compute', prefix: 'src/compute/', mayImport: ['platform'] },
  { name: 'orchestrator', prefix: 'src/orchestrator/', mayImport: ['platform', ...KERNELS] },
  { name: 'vss', prefix: 'src/vss/', mayImport: ['platform', ...KERNELS] },
  { name: 'featurestore', prefix: 'src/featurestore/', mayImport: ['platform', ...KERNELS] },
  { name: 'modelserver', prefix: 'src/modelserver/', mayImport: ['platform', ...KERNELS] },
  // The console's browser code stands alone (bundled for the browser); its server side serves it.
  { name: 'console-app', prefix: 'src/console/app/', mayImport: [] },
  { name: 'console', prefix: 'src/console/', mayImport: ['platform'] },
  { name: 'cli', prefix: 'src/cli/', mayImport: ['*'] },
];

export function layerOf(file: string): Layer | undefined {
  return LAYERS.find((layer) => file.startsWith(layer.prefix));
}

/** Every import that breaks a rule, as `from → to (layer → layer)`. */
export function layerViolations(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const source = layerOf(from);
    if (source === undefined || source.mayImport.includes('*')) continue;
    for (const to of targets) {
      const target = layerOf(to);
      if (target === undefined || target === source || source.mayImport.includes(target.name)) continue;
      found.push(`${from} → ${to} (${source.name} → ${target.name})`);
    }
  }
  return found.sort();
}
