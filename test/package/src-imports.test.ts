/**
 * What ships: dist/ is compiled from what tsconfig.build.json includes (src/ and examples/) and
 * follows their imports, so a module of src/ that imported test data or helpers
 * (test/support/vector-fixtures.ts, say) would carry them into the package. Every relative import in
 * src/ stays inside the shipped folders.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

const SRC = resolve('src');
const SHIPPED = (JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as { include: string[] }).include;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts)$/.test(entry.name) ? [path] : [];
  });
}

/** Relative specifiers of static imports, re-exports and dynamic imports of literal paths. */
function relativeSpecifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.{1,2}\/[^'"]+)\1/g)) {
    found.push(match[2]!);
  }
  return found;
}

test('specifiers are found in static, side-effect, type and dynamic imports', () => {
  const text = [
    "import { a } from '../../test/support/x.js';",
    "import type { B } from './b.js';",
    "import './side.js';",
    "export * from '../c.js';",
    "const d = await import('./d.js');",
    "import { e } from 'node:fs';",
  ].join('\n');
  assert.deepEqual(relativeSpecifiers(text), [
    '../../test/support/x.js',
    './b.js',
    './side.js',
    '../c.js',
    './d.js',
  ]);
});

test('no module of src/ imports anything outside the shipped folders (tests, benchmarks, scripts)', () => {
  assert.deepEqual([...SHIPPED].sort(), ['examples', 'src']);
  const outside: string[] = [];
  for (const file of sourceFiles(SRC)) {
    for (const specifier of relativeSpecifiers(readFileSync(file, 'utf8'))) {
      const [folder] = relative(resolve('.'), resolve(dirname(file), specifier)).split(sep);
      if (!SHIPPED.includes(folder!)) outside.push(`src/${relative(SRC, file)} imports ${specifier}`);
    }
  }
  assert.deepEqual(outside, []);
});
