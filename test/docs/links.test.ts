/**
 * The README and the pages of docs/ link to each other by relative paths and heading anchors: every
 * such link must name a file that exists and, with an anchor, a heading of that page (as GitHub
 * slugs it), so moving or renaming a section breaks this test rather than a reader's click. Every
 * ```mermaid block must start with a diagram type Mermaid knows, and every page of docs/ must be
 * reachable from the README.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pages = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(root, 'docs', name)),
];

const DIAGRAM_TYPES = new Set([
  'flowchart',
  'graph',
  'sequenceDiagram',
  'stateDiagram',
  'stateDiagram-v2',
  'classDiagram',
  'erDiagram',
  'gantt',
  'pie',
  'journey',
  'gitGraph',
  'mindmap',
  'timeline',
]);

/** The page's text outside fenced code blocks (links and headings inside them are not rendered). */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a page, with GitHub's `-1`, `-2` … for repeated headings. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative link targets of a page: `[text](target)`, outside code blocks and inline code. */
function relativeLinks(file: string): string[] {
  const text = prose(readFileSync(file, 'utf8')).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

test('every relative link and anchor of README.md and docs/*.md resolves', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    for (const target of relativeLinks(page)) {
      checked += 1;
      const [path = '', anchor] = target.split('#', 2);
      const file = path === '' ? page : join(dirname(page), decodeURIComponent(path));
      const where = `${relative(root, page)}: ${target}`;
      if (!existsSync(file)) {
        broken.push(`${where} (no file ${relative(root, file)})`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(file).isDirectory() || !file.endsWith('.md')) {
        broken.push(`${where} (an anchor into something that is not a Markdown page)`);
      } else if (!anchorsOf(file).has(anchor)) {
        broken.push(`${where} (no heading with that anchor in ${relative(root, file)})`);
      }
    }
  }
  assert.ok(checked > 0, 'the pages link to each other');
  assert.deepEqual(broken, []);
});

test('every page of docs/ is linked from the README', () => {
  const linked = new Set(
    relativeLinks(join(root, 'README.md')).map((target) => join(root, target.split('#')[0]!)),
  );
  for (const page of pages.slice(1))
    assert.ok(linked.has(page), `README.md links to ${relative(root, page)}`);
});

test('every mermaid block starts with a known diagram type', () => {
  let blocks = 0;
  for (const page of pages) {
    for (const match of readFileSync(page, 'utf8').matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)) {
      blocks += 1;
      const first = match[1]!.split('\n').find((line) => line.trim() !== '' && !line.trim().startsWith('%%'));
      const type = first?.trim().split(/\s+/)[0] ?? '';
      assert.ok(DIAGRAM_TYPES.has(type), `${relative(root, page)}: a mermaid block starts with "${type}"`);
    }
  }
  assert.ok(blocks > 0, 'the pages draw their diagrams in mermaid blocks');
});
