import { createHash } from 'node:crypto';
import { type FSWatcher, watch as watchFiles } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { describeError, LatticeError } from '../../errors.js';
import type { ConfigEvent, ConfigWatch } from '../config-store.js';
import { parseDocument } from '../documents.js';
import type { ConfigEventSink } from '../event-sink.js';
import type { FileRevisions } from './file-revisions.js';
import { listDirectories, readDocumentText, scanDocuments, type WatchedDirectory } from './file-tree.js';

export interface FileConfigWatchOptions {
  readonly dir: string;
  readonly prefix: string;
  readonly revisions: FileRevisions;
  readonly sink: ConfigEventSink;
  readonly debounceMs: number;
  readonly pollIntervalMs: number;
  readonly onClose: () => void;
}

/** How long after its last write an unreadable document is read again before it is reported. */
const SETTLE_MS = 100;

interface KnownDocument {
  readonly fingerprint: string;
  /** Hash of format and text: a touched but unchanged file produces no event. */
  readonly hash: string;
  readonly revision: number;
}

/**
 * Watches a directory for one store's `watch(prefix)`. File events only say "something changed
 * around here", and editors write by rename, in bursts, or truncate then write; so every event
 * schedules a (debounced) rescan of the prefix's directory, and the rescan's difference against the
 * last known state becomes the events. A slow periodic rescan catches what the OS watchers missed.
 *
 * One OS watcher per directory (not Node's recursive watch, which on Linux watches each file's
 * inode and so goes deaf to a file once it has been replaced by rename): a directory's watcher hears
 * every create, rename, write and delete of its entries. After every scan the set of watchers follows
 * the directories that exist, re-attaching where a path now names another directory (the whole tree
 * removed and created again, a Kubernetes ConfigMap's symlink swapped).
 */
export class FileConfigWatch implements ConfigWatch {
  private readonly known = new Map<string, KnownDocument>();
  /** Directory path → its watcher and the identity (`dev:ino`) of the directory it watches. */
  private readonly watchers = new Map<string, { identity: string; watcher: FSWatcher }>();
  private debounceTimer: NodeJS.Timeout | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private rescanRequested = false;
  private closed = false;
  private lastScanError: string | undefined;
  private attachFailed = false;

  constructor(private readonly options: FileConfigWatchOptions) {}

  /** Attaches the OS watcher, then reads the current state (emitting it when `initial`). */
  async start(initial: boolean): Promise<void> {
    try {
      await mkdir(this.options.dir, { recursive: true });
    } catch (err) {
      const message = `config watch: cannot create ${this.options.dir}; polling until it exists`;
      this.options.sink.error(new LatticeError('UNAVAILABLE', message, { cause: err }));
    }
    await this.syncWatchers();
    // Goes through `scanning` like every scan, so an OS event arriving now waits for it to finish.
    this.scanning = this.scan(initial ? 'initial' : 'silent');
    try {
      await this.scanning;
    } catch (err) {
      this.scanning = undefined;
      await this.close();
      throw err;
    }
    this.scanning = undefined;
    if (this.rescanRequested) void this.runScan();
    // Periodic safety net: a rescan (which also re-syncs the watchers) catches what events missed.
    this.pollTimer = setInterval(() => void this.runScan(), this.options.pollIntervalMs);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.options.sink.close();
    clearTimeout(this.debounceTimer);
    clearTimeout(this.settleTimer);
    clearInterval(this.pollTimer);
    this.detachWatchers();
    await this.scanning;
    this.options.onClose();
  }

  /** Makes the watchers match the directories that exist now (see the class comment). */
  private async syncWatchers(): Promise<void> {
    let directories: WatchedDirectory[];
    try {
      directories = await listDirectories(this.options.dir);
    } catch {
      return; // the scan reports why the directory cannot be read; the poll tries again
    }
    if (this.closed) return;
    const wanted = new Map(directories.map((d) => [d.path, d.identity]));
    for (const [path, entry] of this.watchers) {
      if (wanted.get(path) === entry.identity) continue;
      entry.watcher.close();
      this.watchers.delete(path);
    }
    for (const { path, identity } of directories) {
      if (this.watchers.has(path)) continue;
      try {
        const watcher = watchFiles(path, () => this.requestScan());
        // A directory removed under its watcher may end it with an error: drop it, rescan, re-sync.
        watcher.on('error', () => {
          if (this.watchers.get(path)?.watcher !== watcher) return;
          watcher.close();
          this.watchers.delete(path);
          this.requestScan();
        });
        this.watchers.set(path, { identity, watcher });
      } catch (err) {
        // Reported once, not on every scan: the periodic rescan keeps the watch working meanwhile.
        if (this.attachFailed) continue;
        this.attachFailed = true;
        const message = `config watch: cannot watch ${path} for changes; rescanning every ${this.options.pollIntervalMs} ms`;
        this.options.sink.error(new LatticeError('UNAVAILABLE', message, { cause: err }));
      }
    }
    // Every directory watched again: a later failure is news, and reported.
    if (this.watchers.size === directories.length) this.attachFailed = false;
  }

  private detachWatchers(): void {
    for (const { watcher } of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }

  private requestScan(): void {
    if (this.closed || this.debounceTimer !== undefined) return;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      void this.runScan();
    }, this.options.debounceMs);
  }

  /** Runs one scan at a time; a request during a scan runs another right after it. */
  private runScan(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.scanning !== undefined) {
      this.rescanRequested = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      try {
        do {
          this.rescanRequested = false;
          await this.scan('changes');
          this.lastScanError = undefined;
          await this.syncWatchers();
        } while (this.rescanRequested && !this.closed);
      } catch (err) {
        const message = describeError(err);
        if (message !== this.lastScanError) {
          this.lastScanError = message; // report a persisting problem once, not on every poll
          this.options.sink.error(
            new LatticeError('UNAVAILABLE', `config watch: rescan of ${this.options.dir} failed`, {
              cause: err,
            }),
          );
        }
      } finally {
        this.scanning = undefined;
      }
    })();
    return this.scanning;
  }

  /**
   * Diffs the directory against the known state and emits the differences: `initial` emits the whole
   * state by key, `changes` emits in modification order (changes within one debounce window are
   * coalesced to each key's latest state), `silent` only records the state.
   */
  private async scan(mode: 'initial' | 'changes' | 'silent'): Promise<void> {
    const { dir, prefix, revisions, sink } = this.options;
    const files = await scanDocuments(dir, prefix);
    const present = new Set(files.map((f) => f.key));
    const events: ConfigEvent[] = [];
    let unsettled = false;
    for (const [key, previous] of this.known) {
      if (present.has(key)) continue;
      this.known.delete(key);
      events.push({ type: 'delete', key, revision: revisions.deletionOf(key, previous.revision) });
    }
    for (const file of files) {
      if (this.closed) return;
      const previous = this.known.get(file.key);
      if (previous?.fingerprint === file.fingerprint) continue;
      if (file.keyProblem !== undefined) {
        const revision = revisions.revisionOf(file.key, file.fingerprint, Date.now() * 1000);
        this.known.set(file.key, { fingerprint: file.fingerprint, hash: 'invalid name', revision });
        const reason = `file ${file.path}: its name does not make a valid key: the key ${file.keyProblem}`;
        events.push({ type: 'invalid', key: file.key, reason, revision });
        continue;
      }
      const read = await readDocumentText(file.path);
      if (read === undefined) continue; // removed meanwhile: the next scan sees it gone
      const hash = createHash('sha256').update(file.format).update('\0').update(read.text).digest('hex');
      if (previous?.hash === hash) {
        this.known.set(file.key, { ...previous, fingerprint: read.fingerprint });
        continue;
      }
      const parsed = parseDocument(read.text, file.format);
      if (!parsed.ok && mode === 'changes' && Date.now() - read.mtimeUs / 1000 < SETTLE_MS) {
        // Written a moment ago and not readable: most likely caught between an in-place writer's
        // truncate and its write. Not recorded (the key keeps its last known version, whose
        // fingerprint differs), so a rescan shortly reads it again; only a document still broken
        // once it has settled is reported.
        unsettled = true;
        continue;
      }
      const revision = revisions.revisionOf(file.key, read.fingerprint, read.mtimeUs);
      this.known.set(file.key, { fingerprint: read.fingerprint, hash, revision });
      events.push(
        parsed.ok
          ? { type: 'put', key: file.key, value: parsed.value, revision }
          : { type: 'invalid', key: file.key, reason: `file ${file.path}: ${parsed.reason}`, revision },
      );
    }
    if (unsettled && !this.closed) {
      clearTimeout(this.settleTimer);
      this.settleTimer = setTimeout(() => this.requestScan(), SETTLE_MS);
    }
    if (mode === 'silent') return;
    const byKey = (a: ConfigEvent, b: ConfigEvent) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    events.sort(mode === 'initial' ? byKey : (a, b) => a.revision - b.revision || byKey(a, b));
    for (const event of events) sink.emit(event);
  }
}
