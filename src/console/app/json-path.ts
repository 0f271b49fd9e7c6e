/**
 * Where a problem's JSON path is in the editor's text. The validator names paths as JSON Pointers
 * (`/dag/2/deadline_ms`) or dotted paths (`$.dag[2].deadline_ms`, `dag.2.deadline_ms`); jsonc-parser
 * finds the node at that location in the text as typed, so the editor can select it.
 */
import { findNodeAtLocation, type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';

export type Segment = string | number;

export function pathSegments(path: string): Segment[] {
  const trimmed = path.trim();
  if (trimmed === '' || trimmed === '$' || trimmed === '/') return [];
  const raw = trimmed.startsWith('/')
    ? trimmed
        .slice(1)
        .split('/')
        .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    : trimmed
        .replace(/^\$\.?/, '')
        .replace(/\[(\d+)\]/g, '.$1')
        .replace(/\[["']([^"']*)["']\]/g, '.$1')
        .split('.')
        .filter((s) => s !== '');
  return raw.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** The text range of the value at `path` (or of its nearest existing parent); undefined if none. */
export function rangeOf(text: string, path: string): { offset: number; length: number } | undefined {
  const tree = parseTree(text);
  if (tree === undefined) return undefined;
  const segments = pathSegments(path);
  for (let n = segments.length; n >= 0; n--) {
    const node = findNodeAtLocation(tree, segments.slice(0, n));
    if (node !== undefined) {
      // A property's value: select the "key": value pair, so the name the problem is about shows.
      const parent = node.parent?.type === 'property' ? node.parent : node;
      return { offset: parent.offset, length: parent.length };
    }
  }
  return undefined;
}

/** Syntax errors of the text with their line and column, as the editor lists them. */
export function syntaxErrors(
  text: string,
): { message: string; line: number; column: number; offset: number }[] {
  const errors: ParseError[] = [];
  parseTree(text, errors, { allowTrailingComma: false, disallowComments: true });
  return errors.map((e) => {
    const before = text.slice(0, e.offset).split('\n');
    return {
      message: printParseErrorCode(e.error),
      line: before.length,
      column: (before[before.length - 1]?.length ?? 0) + 1,
      offset: e.offset,
    };
  });
}
