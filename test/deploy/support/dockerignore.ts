/**
 * Which paths of the repository a `docker build .` sends, by the rules of .dockerignore: patterns are
 * Go filepath.Match patterns plus `**` (any number of directories), relative to the context root; a
 * pattern that matches a path or any of its parent directories excludes it, a `!` pattern includes it
 * again, and the last matching pattern wins.
 */
import { readFileSync } from 'node:fs';
import { dockerignorePath } from './deploy-files.js';

interface Rule {
  pattern: RegExp;
  include: boolean;
}

function toRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '*' && pattern[i + 1] === '*') {
      // `**/` matches zero or more directories; a trailing `**` anything below.
      if (pattern[i + 2] === '/') {
        source += '(?:.*/)?';
        i += 2;
      } else {
        source += '.*';
        i += 1;
      }
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

export function dockerignoreRules(text = readFileSync(dockerignorePath, 'utf8')): Rule[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const include = line.startsWith('!');
      // Docker cleans each pattern: no leading `/` or `./`, no trailing `/`.
      const cleaned = (include ? line.slice(1) : line).replace(/^\.?\//, '').replace(/\/+$/, '');
      return { pattern: toRegExp(cleaned), include };
    });
}

/** Whether `path` (relative to the repository root, `/`-separated) is in the build context. */
export function inBuildContext(path: string, rules = dockerignoreRules()): boolean {
  const parts = path.replace(/\/+$/, '').split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let included = true;
  for (const rule of rules) {
    if (candidates.some((candidate) => rule.pattern.test(candidate))) included = rule.include;
  }
  return included;
}
