import type { IKeyValue, IWatchResponse, Namespace, Watcher } from 'etcd3';
import { describeError, LatticeError } from '../../errors.js';
import { Backoff } from '../../scheduling/index.js';
import { withTimeout } from '../../timeout.js';
import type { ConfigEvent, ConfigWatch } from '../config-store.js';
import type { ConfigEventSink } from '../event-sink.js';

/** A consistent read of a prefix: its key-values and the store revision they were read at. */
export interface EtcdSnapshot {
  readonly kvs: readonly IKeyValue[];
  readonly revision: number;
}

export interface EtcdConfigWatchOptions {
  readonly kv: Namespace;
  readonly prefix: string;
  readonly sink: ConfigEventSink;
  /** `etcd at <endpoints>`, for messages. */
  readonly location: string;
  readonly connectTimeoutMs: number;
  readonly readSnapshot: (prefix: string) => Promise<EtcdSnapshot>;
  /** Turns a key-value into the event a listener gets (`put`, or `invalid` for a malformed value). */
  readonly toEvent: (kv: IKeyValue) => ConfigEvent;
  readonly onClose: () => void;
}

const RESYNC_MAX_DELAY_MS = 5000;

const order = (event: ConfigEvent): number =>
  event.type === 'delete' ? Number.MAX_SAFE_INTEGER : event.revision;

/**
 * One `watch(prefix)` against etcd. The snapshot is read at revision R and the etcd watch starts at
 * R + 1, so nothing falls between them. The etcd3 client reconnects the watch stream by itself; this
 * class makes it resume from the last revision delivered to the listener (the client would resume
 * from the last revision it heard of, which can skip events). When etcd can no longer replay from
 * there (history compacted) or its history went backwards (data restored or wiped), the watch
 * re-reads the prefix and emits the differences against what the listener has seen.
 */
export class EtcdConfigWatch implements ConfigWatch {
  /** Mod revision of the last put (or invalid) delivered per key: the state the listener knows. */
  private readonly known = new Map<string, number>();
  /** Every change up to this revision has been delivered. */
  private delivered = 0;
  private watcher: Watcher | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** Wait before the next re-read: none at first, then backing off while re-reads fail. */
  private resyncDelayMs = 0;
  private readonly resyncBackoff = new Backoff({ initialMs: 200, maxMs: RESYNC_MAX_DELAY_MS });
  private disconnected = false;
  private closed = false;

  constructor(private readonly options: EtcdConfigWatchOptions) {}

  async start(initial: boolean): Promise<void> {
    try {
      const snapshot = await this.options.readSnapshot(this.options.prefix);
      this.apply(snapshot, initial ? 'initial' : 'silent');
      await this.attach();
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.options.sink.close();
    clearTimeout(this.resyncTimer);
    await this.detach();
    this.options.onClose();
  }

  /** Records a snapshot as the known state; emits it whole (`initial`) or as differences (`diff`). */
  private apply(snapshot: EtcdSnapshot, mode: 'initial' | 'diff' | 'silent'): void {
    const events: ConfigEvent[] = [];
    const present = new Set<string>();
    for (const kv of snapshot.kvs) {
      const key = kv.key.toString('utf8');
      const revision = Number(kv.mod_revision);
      present.add(key);
      if (this.known.get(key) === revision) continue;
      this.known.set(key, revision);
      if (mode !== 'silent') events.push(this.options.toEvent(kv));
    }
    for (const key of [...this.known.keys()]) {
      if (present.has(key)) continue;
      this.known.delete(key);
      // When exactly it was deleted is gone with the history; the snapshot revision bounds it.
      if (mode !== 'silent') events.push({ type: 'delete', key, revision: snapshot.revision });
    }
    this.delivered = snapshot.revision;
    // Changes in the order they were made; the deletions (whose time is unknown) after them, by key.
    if (mode === 'diff') events.sort((a, b) => order(a) - order(b) || (a.key < b.key ? -1 : 1));
    for (const event of events) this.options.sink.emit(event);
  }

  private async attach(): Promise<void> {
    const { kv, prefix, location, connectTimeoutMs } = this.options;
    const watcher = kv
      .watch()
      .prefix(prefix)
      .startRevision(String(this.delivered + 1))
      .watcher();
    this.watcher = watcher;
    let live = false;
    let refused: Error | undefined;
    const created = new Promise<void>((resolve, reject) => {
      watcher.once('connected', () => resolve());
      watcher.once('error', reject);
    });
    watcher.on('data', (res) => this.onData(watcher, res));
    watcher.on('connected', (res) => this.onConnected(watcher, res));
    watcher.on('disconnected', (err) => this.onDisconnected(watcher, err));
    watcher.on('error', (err) => {
      if (live) this.onCanceled(watcher, err);
      else refused = err;
    });
    try {
      await withTimeout(
        `${location}: watch ${JSON.stringify(prefix)}`,
        connectTimeoutMs,
        created,
        'UNAVAILABLE',
      );
      live = true;
    } catch (err) {
      // A watcher etcd refused is already gone from the client; cancelling it would wait for nothing.
      if (refused !== undefined && this.watcher === watcher) this.watcher = undefined;
      await this.detach();
      if (err instanceof LatticeError) throw err;
      throw new LatticeError('UNAVAILABLE', `${location}: watch ${JSON.stringify(prefix)} refused`, {
        cause: err,
      });
    }
  }

  /** Cancels the current etcd watcher, if any; its late events are ignored from now on. */
  private async detach(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    if (watcher === undefined) return;
    try {
      await withTimeout('cancel etcd watch', this.options.connectTimeoutMs, watcher.cancel());
    } catch {
      // The server is gone or hung; closing the client tears the stream down anyway.
    }
  }

  private onData(watcher: Watcher, res: IWatchResponse): void {
    if (watcher !== this.watcher || this.closed) return;
    if (res.events.length === 0) {
      // A progress notification: etcd sends them only when every change up to it was sent.
      if (!res.created) this.delivered = Math.max(this.delivered, Number(res.header.revision));
      return;
    }
    // One revision can hold several events (a transaction, a range delete); etcd sends them together.
    const alreadyDelivered = this.delivered;
    for (const event of res.events) {
      const revision = Number(event.kv.mod_revision);
      if (revision <= alreadyDelivered) continue; // replayed after a reconnect
      const key = event.kv.key.toString('utf8');
      if (event.type === 'Delete') {
        this.known.delete(key);
        this.options.sink.emit({ type: 'delete', key, revision });
      } else {
        this.known.set(key, revision);
        this.options.sink.emit(this.options.toEvent(event.kv));
      }
      this.delivered = Math.max(this.delivered, revision);
    }
  }

  private onConnected(watcher: Watcher, res: IWatchResponse): void {
    if (watcher !== this.watcher || this.closed) return;
    this.disconnected = false;
    this.resyncDelayMs = 0;
    this.resyncBackoff.reset();
    if (Number(res.header.revision) < this.delivered) {
      this.options.sink.error(
        new LatticeError(
          'ABORTED',
          `${this.options.location}: revision went back from ${this.delivered} to ${res.header.revision} ` +
            '(data restored or replaced); re-reading the watched keys',
        ),
      );
      // Revisions of the old history mean nothing in the new one: re-deliver every key.
      for (const key of this.known.keys()) this.known.set(key, -1);
      this.resync();
    }
  }

  private onDisconnected(watcher: Watcher, err: Error): void {
    if (watcher !== this.watcher || this.closed) return;
    // The client would resume from the newest revision it heard of; resume from what was delivered.
    watcher.request.start_revision = String(this.delivered + 1);
    if (this.disconnected) return;
    this.disconnected = true;
    this.options.sink.error(
      new LatticeError(
        'UNAVAILABLE',
        `${this.options.location}: watch ${JSON.stringify(this.options.prefix)} lost its connection; ` +
          `resuming from revision ${this.delivered + 1}`,
        { cause: err },
      ),
    );
  }

  /** etcd canceled the watch, usually because the revision to resume from was compacted away. */
  private onCanceled(watcher: Watcher, err: Error): void {
    if (watcher !== this.watcher || this.closed) return;
    this.watcher = undefined; // the client has already dropped it
    this.options.sink.error(
      new LatticeError(
        'ABORTED',
        `${this.options.location}: watch ${JSON.stringify(this.options.prefix)} canceled by etcd ` +
          `(${describeError(err)}); re-reading the watched keys`,
        { cause: err },
      ),
    );
    this.resync();
  }

  /** Drops the etcd watcher, re-reads the prefix, emits the differences and watches again. */
  private resync(): void {
    if (this.closed || this.resyncTimer !== undefined) return;
    void this.detach();
    this.resyncTimer = setTimeout(async () => {
      try {
        const snapshot = await this.options.readSnapshot(this.options.prefix);
        if (this.closed) return;
        this.apply(snapshot, 'diff');
        await this.attach();
        this.resyncDelayMs = 0;
        this.resyncBackoff.reset();
      } catch (err) {
        if (this.closed) return;
        this.resyncDelayMs = this.resyncBackoff.next();
        this.options.sink.error(
          new LatticeError(
            'UNAVAILABLE',
            `${this.options.location}: re-reading ${JSON.stringify(this.options.prefix)} failed; retrying in ` +
              `${this.resyncDelayMs} ms`,
            { cause: err },
          ),
        );
      } finally {
        this.resyncTimer = undefined;
      }
      if (!this.closed && this.watcher === undefined) this.resync();
    }, this.resyncDelayMs);
  }
}
