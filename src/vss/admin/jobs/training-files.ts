/**
 * The files of a `training_data_path`: a `file://` URL or a plain path naming one file or a
 * directory. A directory is read recursively, files in name order of their path relative to it
 * (code-unit order, so `part-00002` comes before `part-00010`); names starting with `.` or `_`
 * (`_SUCCESS`, `.crc` and other markers batch platforms leave beside their output) are skipped.
 * The format comes from the extension (`.parquet`, `.pq`; `.jsonl`, `.ndjson`, `.json`) or, for
 * other names, from the first bytes (`PAR1`, or a `{`).
 */
import { open, readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError, invalidArgument, LatticeError } from '../../../platform/errors.js';

export type TrainingFormat = 'parquet' | 'jsonl';

export interface TrainingFile {
  /** Absolute path. */
  path: string;
  /** The path relative to the training data path (the file's own name when the path is a file). */
  name: string;
  format: TrainingFormat;
  size: number;
  mtimeMs: number;
}

const EXTENSIONS: Readonly<Record<string, TrainingFormat>> = {
  parquet: 'parquet',
  pq: 'parquet',
  jsonl: 'jsonl',
  ndjson: 'jsonl',
  json: 'jsonl',
};

/** Where a path or `file://` URL points on this machine; INVALID_ARGUMENT for other URL schemes. */
export function localPath(trainingDataPath: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trainingDataPath)) {
    if (!trainingDataPath.toLowerCase().startsWith('file://')) {
      const scheme = trainingDataPath.slice(0, trainingDataPath.indexOf(':'));
      throw invalidArgument(
        `training_data_path ${trainingDataPath}: the built-in job runner reads local files (a path or a ` +
          `file:// URL), not ${scheme}://; use the HTTP job runner for object storage`,
        'training_data_path',
      );
    }
    try {
      return fileURLToPath(trainingDataPath);
    } catch (err) {
      throw invalidArgument(
        `training_data_path ${trainingDataPath} is not a valid file URL: ${describeError(err)}`,
        'training_data_path',
      );
    }
  }
  return isAbsolute(trainingDataPath) ? trainingDataPath : resolve(trainingDataPath);
}

/** The training files in reading order; fails (NOT_FOUND, INVALID_ARGUMENT) with a message naming the path. */
export async function listTrainingFiles(trainingDataPath: string): Promise<TrainingFile[]> {
  const root = localPath(trainingDataPath);
  const info = await stat(root).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') {
      throw new LatticeError('NOT_FOUND', `training_data_path ${trainingDataPath} does not exist`, {
        field: 'training_data_path',
      });
    }
    throw unreadable(trainingDataPath, err);
  });
  if (info.isFile()) {
    const name = root.slice(root.lastIndexOf(sep) + 1);
    return [await trainingFile(root, name, info.size, info.mtimeMs)];
  }
  if (!info.isDirectory()) {
    throw invalidArgument(
      `training_data_path ${trainingDataPath} is neither a file nor a directory`,
      'training_data_path',
    );
  }
  const paths = await walk(root).catch((err: unknown) => {
    throw unreadable(trainingDataPath, err);
  });
  const names = paths.map((path) => ({ path, name: relative(root, path).split(sep).join('/') }));
  names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: TrainingFile[] = [];
  for (const { path, name } of names) {
    const fileInfo = await stat(path).catch((err: unknown) => {
      throw unreadable(name, err);
    });
    files.push(await trainingFile(path, name, fileInfo.size, fileInfo.mtimeMs));
  }
  if (files.length === 0) {
    throw invalidArgument(
      `training_data_path ${trainingDataPath} holds no data files (Parquet: .parquet, .pq; JSON Lines: .jsonl, .ndjson, .json)`,
      'training_data_path',
    );
  }
  return files;
}

async function walk(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name.startsWith('_')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await walk(path)));
    else if (entry.isFile() || entry.isSymbolicLink()) found.push(path);
  }
  return found;
}

async function trainingFile(
  path: string,
  name: string,
  size: number,
  mtimeMs: number,
): Promise<TrainingFile> {
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  const format = EXTENSIONS[extension] ?? (await sniff(path, name));
  return { path, name, format, size, mtimeMs };
}

/** The format of a file without a known extension, from its first bytes. */
async function sniff(path: string, name: string): Promise<TrainingFormat> {
  const head = Buffer.alloc(64);
  let read = 0;
  try {
    const handle = await open(path, 'r');
    try {
      ({ bytesRead: read } = await handle.read(head, 0, head.length, 0));
    } finally {
      await handle.close();
    }
  } catch (err) {
    throw unreadable(name, err);
  }
  const text = head.subarray(0, read);
  if (text.subarray(0, 4).toString('latin1') === 'PAR1') return 'parquet';
  if (/^(\uFEFF)?\s*\{/.test(text.toString('utf8'))) return 'jsonl';
  throw invalidArgument(
    `${name} is neither Parquet nor JSON Lines (name data files .parquet or .jsonl, or start their names with "_" to skip them)`,
    'training_data_path',
  );
}

function unreadable(what: string, err: unknown): LatticeError {
  return new LatticeError('FAILED_PRECONDITION', `${what} cannot be read: ${describeError(err)}`, {
    field: 'training_data_path',
    cause: err,
  });
}
