import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { LatticeError } from '../../errors.js';
import type {
  ConfigEntry,
  ConfigListener,
  ConfigListOptions,
  ConfigStore,
  ConfigWatch,
  ConfigWatchOptions,
} from '../config-store.js';
import { parseDocument, serializeDocument } from '../documents.js';
import { ConfigEventSink } from '../event-sink.js';
import { assertKey, assertPrefix } from '../keys.js';
import { FileConfigWatch } from './file-config-watch.js';
import { FileRevisions } from './file-revisions.js';
import {
  EXTENSIONS,
  fileError,
  fingerprintOf,
  keyPath,
  readDocumentText,
  scanDocuments,
} from './file-tree.js';

export interface FileConfigStoreOptions {
  /** The directory holding the documents; created when a watch or put needs it. */
  readonly dir: string;
  /** How long a watch waits after a file event before rescanning, to take in a burst. Default 50. */
  readonly debounceMs?: number;
  /** How often a watch rescans regardless of file events (safety net, re-attach). Default 2000. */
  readonly pollIntervalMs?: number;
}

/**
 * The embedded ConfigStore: a directory of JSON/YAML documents, `models/x` ↔ `<dir>/models/x.json`
 * (or `.yaml`/`.yml`). Writes are atomic (temp file + rename) and always JSON; a put removes a YAML
 * file of the same key so that one file holds each key. Watches see edits made by anyone.
 */
export class FileConfigStore implements ConfigStore {
  readonly dir: string;
  private readonly debounceMs: number;
  private readonly pollIntervalMs: number;
  private readonly revisions = new FileRevisions();
  private readonly watches = new Set<FileConfigWatch>();
  private closed = false;

  constructor(options: FileConfigStoreOptions) {
    if (typeof options.dir !== 'string' || options.dir === '') {
      throw new LatticeError('INVALID_ARGUMENT', 'file config store: dir must be a non-empty path', {
        field: 'dir',
      });
    }
    this.dir = resolve(options.dir);
    this.debounceMs = options.debounceMs ?? 50;
    this.pollIntervalMs = options.pollIntervalMs ?? 2000;
  }

  async get(key: string): Promise<ConfigEntry | undefined> {
    this.assertOpen();
    assertKey(key);
    for (const { ext, format } of EXTENSIONS) {
      const path = keyPath(this.dir, key, ext);
      const read = await readDocumentText(path);
      if (read === undefined) continue;
      const parsed = parseDocument(read.text, format);
      if (!parsed.ok) {
        throw new LatticeError(
          'INVALID_ARGUMENT',
          `config key ${JSON.stringify(key)}: file ${path}: ${parsed.reason}`,
          {
            field: key,
          },
        );
      }
      return {
        key,
        value: parsed.value,
        revision: this.revisions.revisionOf(key, read.fingerprint, read.mtimeUs),
      };
    }
    return undefined;
  }

  async list(prefix: string, options: ConfigListOptions = {}): Promise<ConfigEntry[]> {
    this.assertOpen();
    assertPrefix(prefix);
    const entries: ConfigEntry[] = [];
    for (const file of await scanDocuments(this.dir, prefix)) {
      if (file.keyProblem !== undefined) {
        const reason = `file ${file.path}: its name does not make a valid key: the key ${file.keyProblem}`;
        const revision = this.revisions.revisionOf(file.key, file.fingerprint, Date.now() * 1000);
        options.onInvalid?.({ type: 'invalid', key: file.key, reason, revision });
        continue;
      }
      const read = await readDocumentText(file.path);
      if (read === undefined) continue;
      const revision = this.revisions.revisionOf(file.key, read.fingerprint, read.mtimeUs);
      const parsed = parseDocument(read.text, file.format);
      if (parsed.ok) entries.push({ key: file.key, value: parsed.value, revision });
      else
        options.onInvalid?.({
          type: 'invalid',
          key: file.key,
          reason: `file ${file.path}: ${parsed.reason}`,
          revision,
        });
    }
    return entries;
  }

  async put(key: string, value: unknown): Promise<number> {
    this.assertOpen();
    assertKey(key);
    const text = serializeDocument(key, value, true);
    const path = keyPath(this.dir, key, '.json');
    const folder = dirname(path);
    const temp = join(folder, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await mkdir(folder, { recursive: true });
      const handle = await open(temp, 'wx', 0o644);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.datasync();
      } finally {
        await handle.close();
      }
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true });
      throw fileError('write', path, err);
    }
    for (const { ext } of EXTENSIONS) {
      if (ext !== '.json') await rm(keyPath(this.dir, key, ext), { force: true });
    }
    const st = await stat(path, { bigint: true });
    return this.revisions.revisionOf(key, fingerprintOf(st, path), Number(st.mtimeNs / 1000n));
  }

  async delete(key: string): Promise<boolean> {
    this.assertOpen();
    assertKey(key);
    let existed = false;
    for (const { ext } of EXTENSIONS) {
      const path = keyPath(this.dir, key, ext);
      try {
        await unlink(path);
        existed = true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw fileError('delete', path, err);
      }
    }
    return existed;
  }

  async watch(
    prefix: string,
    listener: ConfigListener,
    options: ConfigWatchOptions = {},
  ): Promise<ConfigWatch> {
    this.assertOpen();
    assertPrefix(prefix);
    const watch = new FileConfigWatch({
      dir: this.dir,
      prefix,
      revisions: this.revisions,
      sink: new ConfigEventSink(listener, options.onError),
      debounceMs: this.debounceMs,
      pollIntervalMs: this.pollIntervalMs,
      onClose: () => this.watches.delete(watch),
    });
    this.watches.add(watch);
    await watch.start(options.initial === true);
    return watch;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.watches].map((watch) => watch.close()));
  }

  private assertOpen(): void {
    if (this.closed)
      throw new LatticeError('FAILED_PRECONDITION', `file config store on ${this.dir} is closed`);
  }
}
