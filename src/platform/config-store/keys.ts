import { invalidArgument } from '../errors.js';

/**
 * Keys are slash paths such as `models/catalog_ranker`: segments of letters, digits and `_ - . @ : + =`,
 * none empty, none starting with a dot (so `.` and `..` cannot escape a directory and editors' hidden
 * temp files are never keys). The same rule holds for every adapter, so a key that works against the
 * file store also works against etcd.
 */
const SEGMENT = /^[A-Za-z0-9_\-@:+=][A-Za-z0-9_\-.@:+=]*$/;
const MAX_KEY_LENGTH = 1024;

/** Why `key` is not a valid key, or undefined when it is. */
export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return 'is empty';
  if (key.length > MAX_KEY_LENGTH) return `is longer than ${MAX_KEY_LENGTH} characters`;
  if (key.startsWith('/')) return 'starts with a slash (keys are relative paths like models/x)';
  if (key.endsWith('/')) return 'ends with a slash';
  for (const segment of key.split('/')) {
    if (segment === '') return 'has an empty path segment';
    if (segment === '..' || segment === '.') return `has a "${segment}" path segment`;
    if (!SEGMENT.test(segment)) {
      return `has the segment "${segment}": use letters, digits and _ - . @ : + = and do not start with a dot`;
    }
  }
  return undefined;
}

/** Throws INVALID_ARGUMENT unless `key` is a valid key. */
export function assertKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw invalidArgument(`config key must be a string, got ${typeof key}`, 'key');
  const problem = keyProblem(key);
  if (problem !== undefined) throw invalidArgument(`config key ${JSON.stringify(key)} ${problem}`, 'key');
}

/**
 * Throws INVALID_ARGUMENT unless `prefix` is a valid key prefix: empty (every key), or a key, a key
 * followed by a slash, or a key whose last segment is cut short (`models/cat` matches
 * `models/catalog_ranker`). Matching is by string prefix, the same as etcd's.
 */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string') {
    throw invalidArgument(`config key prefix must be a string, got ${typeof prefix}`, 'prefix');
  }
  if (prefix === '') return;
  const asKey = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  const problem = keyProblem(asKey);
  if (problem !== undefined) {
    throw invalidArgument(`config key prefix ${JSON.stringify(prefix)} ${problem}`, 'prefix');
  }
}
