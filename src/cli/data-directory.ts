/**
 * What `lattice check` can tell about an embedded adapter's data directory (PGlite, the queue
 * journal, the embedded vector database) without opening the adapter: opening creates the directory
 * and its files, and recovers or initialises a database, which a check must not do. Everything here
 * only reads the file system.
 */
import { accessSync, constants, type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { lockHolder } from '../platform/dir-lock.js';

export type DataDirectoryState =
  /** A running process holds its lock: that process answers for it. */
  | { kind: 'held'; pid: number }
  /** It does not exist yet, and the first start can create it. */
  | { kind: 'absent' }
  /** It exists, no process holds it, and this user may write in it. */
  | { kind: 'idle' }
  /** It cannot serve: not a directory, or not writable (nor creatable). */
  | { kind: 'unusable'; reason: string };

export function inspectDataDirectory(dir: string): DataDirectoryState {
  const holder = lockHolder(dir);
  if (holder !== undefined) return { kind: 'held', pid: holder.pid };
  const path = resolve(dir);
  const found = statOf(path);
  if (found !== undefined) {
    if (!found.isDirectory()) return { kind: 'unusable', reason: `${path} is not a directory` };
    return writable(path) ? { kind: 'idle' } : { kind: 'unusable', reason: `${path} is not writable` };
  }
  // The first start creates it and every missing parent: the nearest existing one must take them.
  let parent = dirname(path);
  let stat = statOf(parent);
  while (stat === undefined && dirname(parent) !== parent) {
    parent = dirname(parent);
    stat = statOf(parent);
  }
  if (stat?.isDirectory() && writable(parent)) return { kind: 'absent' };
  return {
    kind: 'unusable',
    reason: `${path} does not exist and cannot be created (${parent} is ${stat?.isDirectory() ? 'not writable' : 'not a directory'})`,
  };
}

/** The entry at `path`; undefined when there is none (also below a file: ENOTDIR). */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
