/**
 * Where the built-in job runner may read training data: only under the configured roots
 * (`vss.admin.trainingDataRoots`; default the data directory and the model repository), so an admin
 * request cannot make the server read, and report the row counts of, any file it can open. The path
 * is checked as the kernel would open it: symlinks and `..` are resolved first, and so is each file a
 * directory holds (a symlink inside a root that points outside it is refused too).
 */
import { realpath } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { LatticeError } from '../../../platform/errors.js';
import { localPath } from './training-files.js';

/** The real path of `path`; for one that does not exist (yet), its nearest existing ancestor's real path joined with the rest. */
async function realPathOf(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    // Missing (or not a directory, or unreadable): judged by where its nearest resolvable ancestor is.
    const parent = dirname(path);
    return parent === path ? path : join(await realPathOf(parent), basename(path));
  }
}

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** The roots as real paths (a root that does not exist yet as written). */
async function realRoots(roots: readonly string[]): Promise<string[]> {
  return Promise.all(roots.map((root) => realPathOf(root).catch(() => root)));
}

function outside(trainingDataPath: string, roots: readonly string[], what = trainingDataPath): LatticeError {
  return new LatticeError(
    'INVALID_ARGUMENT',
    `training_data_path ${trainingDataPath}${what === trainingDataPath ? '' : ` (${what})`} is outside the ` +
      `directories training data may be read from (${roots.join(', ')}): put the data under one of them, ` +
      'or add its directory to vss.admin.trainingDataRoots (LATTICE_VSS_TRAINING_DATA_ROOTS)',
    { field: 'training_data_path' },
  );
}

/**
 * Checks that `trainingDataPath` (a path or `file://` URL) lies under one of `roots`, after
 * resolving symlinks and `..`; INVALID_ARGUMENT naming the field and the roots otherwise (also for
 * a URL scheme the built-in runner cannot read).
 */
export async function confineTrainingDataPath(
  trainingDataPath: string,
  roots: readonly string[],
): Promise<void> {
  const real = await realPathOf(localPath(trainingDataPath));
  if (!(await realRoots(roots)).some((root) => within(real, root))) throw outside(trainingDataPath, roots);
}

/** Checks each file found under the training data path (symlinks resolved) against the roots. */
export async function confineTrainingFiles(
  trainingDataPath: string,
  files: readonly { path: string; name: string }[],
  roots: readonly string[],
): Promise<void> {
  const allowed = await realRoots(roots);
  for (const file of files) {
    const real = await realPathOf(file.path);
    if (!allowed.some((root) => within(real, root)))
      throw outside(trainingDataPath, roots, `${file.name} -> ${real}`);
  }
}
