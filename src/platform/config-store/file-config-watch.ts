import { createHash } from 'node:crypto';
import { type FSWatcher, watch as watchFiles } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { describeError, LatticeError } from '../errors.js';
import type { ConfigEvent, ConfigWatch } from './config-store.js';
import { parseDocument } from './documents.js';
import type { ConfigEventSink } from './event-sink.js';
import type { FileRevisions } from './file-revisions.js';
import { readDocumentText, scanDocuments } from './file-tree.js';

export interface FileConfigWatchOptions {
  readonly dir: string;
  readonly prefix: string;
  readonly revisions: FileRevisions;
  readonly sink: ConfigEventSink;
  readonly debounceMs: number;
  readonly pollIntervalMs: number;
  readonly onClose: () => void;
}

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
 * last known state becomes the events. A slow periodic rescan catches what the OS watcher missed and
 * re-attaches it when the directory is removed and created again (or did not exist at first).
 */
export class FileConfigWatch implements ConfigWatch {
  private readonly known = new Map<string, KnownDocument>();
  private watcher: FSWatcher | undefined;
  /** dev:ino of the directory `watcher` watches, to notice the directory being replaced. */
  private watchedDir: string | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
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
    await this.attachWatcher();
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
    this.pollTimer = setInterval(() => void this.poll(), this.options.pollIntervalMs);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.options.sink.close();
    clearTimeout(this.debounceTimer);
    clearInterval(this.pollTimer);
    this.detachWatcher();
    await this.scanning;
    this.options.onClose();
  }

  private async attachWatcher(): Promise<void> {
    const { dir } = this.options;
    let identity: string;
    try {
      const st = await stat(dir);
      if (!st.isDirectory()) return;
      identity = `${st.dev}:${st.ino}`;
    } catch {
      return; // not there (yet): the poll tries again
    }
    if (this.closed) return;
    try {
      // Recursive watching works on Linux since Node 20 (and natively on macOS and Windows).
      const watcher = watchFiles(dir, { recursive: true }, () => this.requestScan());
      watcher.on('error', (err) => {
        if (this.watcher !== watcher) return;
        this.detachWatcher();
        this.options.sink.error(
          new LatticeError('UNAVAILABLE', `config watch on ${dir} failed; re-attaching`, { cause: err }),
        );
        this.requestScan();
      });
      this.watcher = watcher;
      this.watchedDir = identity;
      this.attachFailed = false;
    } catch (err) {
      // Reported once, not on every poll: the periodic rescan keeps the watch working meanwhile.
      if (this.attachFailed) return;
      this.attachFailed = true;
      const message = `config watch: cannot watch ${dir} for changes; rescanning every ${this.options.pollIntervalMs} ms`;
      this.options.sink.error(new LatticeError('UNAVAILABLE', message, { cause: err }));
    }
  }

  private detachWatcher(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.watchedDir = undefined;
  }

  /** Periodic safety net: re-attach the OS watcher if the directory was replaced, then rescan. */
  private async poll(): Promise<void> {
    let identity: string | undefined;
    try {
      const st = await stat(this.options.dir);
      identity = st.isDirectory() ? `${st.dev}:${st.ino}` : undefined;
    } catch {
      identity = undefined;
    }
    if (this.closed) return;
    if (identity !== this.watchedDir) {
      this.detachWatcher();
      if (identity !== undefined) await this.attachWatcher();
    }
    await this.runScan();
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
      const revision = revisions.revisionOf(file.key, read.fingerprint, read.mtimeUs);
      this.known.set(file.key, { fingerprint: read.fingerprint, hash, revision });
      const parsed = parseDocument(read.text, file.format);
      events.push(
        parsed.ok
          ? { type: 'put', key: file.key, value: parsed.value, revision }
          : { type: 'invalid', key: file.key, reason: `file ${file.path}: ${parsed.reason}`, revision },
      );
    }
    if (mode === 'silent') return;
    const byKey = (a: ConfigEvent, b: ConfigEvent) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    events.sort(mode === 'initial' ? byKey : (a, b) => a.revision - b.revision || byKey(a, b));
    for (const event of events) sink.emit(event);
  }
}
