import type { BigIntStats, Dirent } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { LatticeError } from '../../errors.js';
import type { DocumentFormat } from '../documents.js';
import { keyProblem } from '../keys.js';

/**
 * How the file store lays keys out on disk: `models/x` is `<dir>/models/x.json`, or `.yaml`/`.yml`
 * when no `.json` exists (that is also the precedence when several exist). Names starting with a dot
 * are never documents, so temp files of atomic writes and editors' swap files are ignored.
 */
export const EXTENSIONS: readonly { ext: string; format: DocumentFormat }[] = [
  { ext: '.json', format: 'json' },
  { ext: '.yaml', format: 'yaml' },
  { ext: '.yml', format: 'yaml' },
];

/** Symlinked directories are followed (Kubernetes ConfigMap volumes are symlinks), this deep at most. */
const MAX_DEPTH = 32;

export function keyPath(dir: string, key: string, ext: string): string {
  return join(dir, ...key.split('/')) + ext;
}

/** A document file found by a scan; `fingerprint` changes whenever the file may have changed. */
export interface DocumentFile {
  readonly key: string;
  readonly path: string;
  readonly format: DocumentFormat;
  readonly fingerprint: string;
  /** Why the file's name does not make a valid key, if it does not. */
  readonly keyProblem: string | undefined;
}

/** A document file's text and the identity of the version that was read. */
export interface DocumentText {
  readonly text: string;
  readonly fingerprint: string;
  /** Modification time in microseconds. */
  readonly mtimeUs: number;
}

export function fingerprintOf(st: BigIntStats, path: string): string {
  return `${path}|${st.dev}:${st.ino}|${st.size}|${st.mtimeNs}|${st.ctimeNs}`;
}

/** Turns a failed file-system call into an error a user can act on. */
export function fileError(what: string, path: string, err: unknown): LatticeError {
  const code = (err as NodeJS.ErrnoException).code;
  const denied = code === 'EACCES' || code === 'EPERM';
  return new LatticeError(
    denied ? 'PERMISSION_DENIED' : 'UNAVAILABLE',
    `config store: cannot ${what} ${path}`,
    {
      cause: err,
    },
  );
}

const isMissing = (err: unknown): boolean => {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
};

/** Reads one document file; `undefined` when it does not exist (or is a directory). */
export async function readDocumentText(path: string): Promise<DocumentText | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw fileError('read', path, err);
  }
  try {
    const st = await handle.stat({ bigint: true });
    if (!st.isFile()) return undefined;
    const text = await handle.readFile('utf8');
    return { text, fingerprint: fingerprintOf(st, path), mtimeUs: Number(st.mtimeNs / 1000n) };
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw fileError('read', path, err);
  } finally {
    await handle.close();
  }
}

/**
 * Every document file under `dir` whose key starts with `prefix`, one per key (by extension
 * precedence), sorted by key. Only the directory the prefix names is walked. A missing directory
 * holds no documents.
 */
export async function scanDocuments(dir: string, prefix: string): Promise<DocumentFile[]> {
  const slash = prefix.lastIndexOf('/');
  const base = slash < 0 ? '' : prefix.slice(0, slash);
  const found = new Map<string, DocumentFile & { rank: number }>();
  await walk(base === '' ? dir : join(dir, ...base.split('/')), base, 0, async (key, path, ext) => {
    if (!key.startsWith(prefix)) return;
    const rank = EXTENSIONS.findIndex((e) => e.ext === ext);
    const existing = found.get(key);
    if (existing !== undefined && existing.rank <= rank) return;
    let st: BigIntStats;
    try {
      st = await stat(path, { bigint: true });
    } catch (err) {
      if (isMissing(err)) return;
      throw fileError('read', path, err);
    }
    if (!st.isFile()) return;
    const current = found.get(key);
    if (current !== undefined && current.rank <= rank) return;
    found.set(key, {
      key,
      path,
      rank,
      format: EXTENSIONS[rank]?.format ?? 'json',
      fingerprint: fingerprintOf(st, path),
      keyProblem: keyProblem(key),
    });
  });
  return [...found.values()]
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ rank: _rank, ...file }) => file);
}

/** A directory's entries; none when it does not exist (any more). */
async function entriesOf(path: string): Promise<Dirent[]> {
  try {
    return await readdir(path, { withFileTypes: true });
  } catch (err) {
    if (isMissing(err)) return [];
    throw fileError('list', path, err);
  }
}

async function walk(
  path: string,
  keyBase: string,
  depth: number,
  visit: (key: string, path: string, ext: string) => Promise<void>,
): Promise<void> {
  const entries = await entriesOf(path);
  await Promise.all(
    entries.map(async (entry) => {
      if (entry.name.startsWith('.')) return;
      const child = path + sep + entry.name;
      const childKey = keyBase === '' ? entry.name : `${keyBase}/${entry.name}`;
      let isDirectory = entry.isDirectory();
      if (entry.isSymbolicLink()) {
        try {
          isDirectory = (await stat(child)).isDirectory();
        } catch {
          return; // dangling link
        }
      }
      if (isDirectory) {
        if (depth < MAX_DEPTH) await walk(child, childKey, depth + 1, visit);
        return;
      }
      const match = EXTENSIONS.find((e) => entry.name.endsWith(e.ext) && entry.name.length > e.ext.length);
      if (match !== undefined) await visit(childKey.slice(0, -match.ext.length), child, match.ext);
    }),
  );
}

/** A directory to watch, and the identity (`dev:ino`, links followed) of what it is now. */
export interface WatchedDirectory {
  readonly path: string;
  readonly identity: string;
}

/**
 * `dir` and every directory below it that a scan walks (hidden ones skipped, symlinked ones
 * followed, as deep as documents are looked for): what a watch must watch, one OS watcher each.
 * Empty when `dir` does not exist.
 */
export async function listDirectories(dir: string): Promise<WatchedDirectory[]> {
  const found: WatchedDirectory[] = [];
  const visit = async (path: string, depth: number): Promise<void> => {
    let identity: string;
    try {
      const st = await stat(path);
      if (!st.isDirectory()) return;
      identity = `${st.dev}:${st.ino}`;
    } catch (err) {
      if (isMissing(err)) return;
      throw fileError('list', path, err);
    }
    found.push({ path, identity });
    if (depth >= MAX_DEPTH) return;
    await Promise.all(
      (await entriesOf(path))
        .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isSymbolicLink()))
        .map((e) => visit(path + sep + e.name, depth + 1)),
    );
  };
  await visit(dir, 0);
  return found;
}
