/**
 * The disk side of the embedded database: its data directory, owned by one process (the lock), the
 * files of every collection (collection-files.ts), and when they are written. Disk work for one
 * collection name (its creation, snapshots, drop) runs one step at a time, so a drop never races a
 * snapshot and a new collection of the same name never meets the old one's files. Snapshots run
 * periodically, early when a collection's log grows large, on demand, and on close.
 */
import { rm } from 'node:fs/promises';
import { type DirLock, lockDirectory } from '../../../dir-lock.js';
import type { ValidatedSpec } from '../../validation.js';
import type { IndexingOptions } from '../index/indexing-options.js';
import type { WriteAheadLog } from '../storage/write-ahead-log.js';
import type { Collection } from './collection.js';
import { CollectionFiles, type StorageOptions } from './collection-files.js';

export interface DataDirectoryOptions {
  dir: string;
  wal: boolean;
  walSnapshotBytes: number;
  /** 0 turns periodic snapshots off. */
  snapshotIntervalMs: number;
  compactionThreshold: number;
  /** With `scratchDir` inside `dir`: what a crash left there is removed on open. */
  indexing: IndexingOptions<Collection>;
  onSnapshotError?: (err: unknown, collection: string) => void;
}

/**
 * A build that ended is saved when a restart from the last snapshot would miss more than this share
 * of the indexed rows (the variants' indexed threshold is 95 %): smaller gains wait for the periodic
 * snapshot or the shutdown one.
 */
const BUILD_SAVE_SHARE = 0.05;
/** Least time between a snapshot and a build-end snapshot of the same collection, ms: a stream of
 * small builds during an ingestion does not rewrite the collection after each. */
const BUILD_SAVE_GAP_MS = 5_000;

/** What a second process that finds the directory locked should do instead. */
const ONE_OWNER_HINT =
  'the embedded vector database lives inside one process: run the vss components together in one process (`lattice vss`), or use a vector database server (Qdrant: LATTICE_VSS_VECTOR_DB=qdrant; pgvector on PostgreSQL: LATTICE_VSS_VECTOR_DB=pgvector)';

export class DataDirectory {
  private readonly files = new Map<string, CollectionFiles>();
  /** Per collection name, the tail of its disk work. */
  private readonly diskWork = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  /** Build-end snapshots waiting for {@link BUILD_SAVE_GAP_MS}, by collection name. */
  private readonly buildSaves = new Map<string, NodeJS.Timeout>();
  private closing = false;

  private constructor(
    private readonly options: DataDirectoryOptions,
    /** The database's collections (read only here): what is live decides what is written. */
    private readonly collections: ReadonlyMap<string, Collection>,
    private readonly lock: DirLock,
  ) {}

  /**
   * Locks `options.dir` (FAILED_PRECONDITION naming the owner when another live process, or this
   * one, has it open) and loads its collections: each one's newest snapshot, then its log.
   */
  static async open(
    options: DataDirectoryOptions,
    collections: ReadonlyMap<string, Collection>,
  ): Promise<{ directory: DataDirectory; recovered: Collection[] }> {
    const lock = lockDirectory(options.dir, 'vector database directory', ONE_OWNER_HINT);
    const directory = new DataDirectory(options, collections, lock);
    let recovered: Collection[];
    try {
      // Graph files a crash left on their way to or from the build worker (worker-round.ts).
      if (options.indexing.scratchDir)
        await rm(options.indexing.scratchDir, { recursive: true, force: true });
      recovered = [];
      for (const { collection, files } of await CollectionFiles.recoverAll(directory.storage())) {
        directory.files.set(collection.name, files);
        recovered.push(collection);
      }
    } catch (err) {
      lock.release();
      throw err;
    }
    if (options.snapshotIntervalMs > 0) {
      directory.timer = setInterval(() => directory.snapshotInBackground(), options.snapshotIntervalMs);
      directory.timer.unref();
    }
    return { directory, recovered };
  }

  /** The log of collection `name`; undefined with the log off. */
  wal(name: string): WriteAheadLog | undefined {
    return this.files.get(name)?.wal;
  }

  /**
   * Makes a new collection durable, in turn with the disk work of its name: `missing` is asked in
   * that turn (a concurrent create may have won), and `created` registers the collection once its
   * files are on disk.
   */
  create(spec: ValidatedSpec, missing: () => boolean, created: () => void): Promise<void> {
    return this.inTurn(spec.name, async () => {
      if (!missing()) return;
      this.files.set(spec.name, await CollectionFiles.create(spec, this.storage()));
      created();
    });
  }

  /** Removes a dropped collection's files, after any snapshot of it in progress. */
  async drop(name: string): Promise<void> {
    const files = this.files.get(name);
    this.files.delete(name);
    if (files) await this.inTurn(name, () => files.drop());
  }

  /** Snapshots one collection, in turn with the other disk work of its name. */
  snapshot(collection: Collection, allowCompaction: boolean): Promise<void> {
    return this.inTurn(collection.name, async () => {
      if (this.collections.get(collection.name) !== collection) return; // dropped meanwhile
      const { graph, indexer } = collection;
      const nodes = graph.size + graph.deletedCount;
      const threshold = this.options.compactionThreshold;
      if (allowCompaction && !indexer.isPaused && graph.deletedCount > threshold * nodes) {
        await indexer.compact();
        if (this.collections.get(collection.name) !== collection) return;
      }
      await this.files.get(collection.name)!.snapshot(collection);
    });
  }

  /**
   * A build of `collection`'s graph ended (IndexingOptions.onBuilt): saves the graph when a restart
   * would otherwise miss much of it. Without this, a collection whose last snapshot fired during its
   * build (a build is not a write) reloaded that partial graph at every restart.
   */
  graphBuilt(collection: Collection): void {
    // With periodic snapshots off (tests, bulk loads) the caller decides when to snapshot.
    if (this.closing || this.options.snapshotIntervalMs <= 0 || this.buildSaves.has(collection.name)) return;
    const wait = Math.max(0, collection.savedAt + BUILD_SAVE_GAP_MS - Date.now());
    const timer = setTimeout(() => {
      this.buildSaves.delete(collection.name);
      if (this.collections.get(collection.name) !== collection || !collection.unsaved) return;
      const indexed = collection.store.indexedCount;
      if (indexed - collection.savedIndexedCount <= BUILD_SAVE_SHARE * indexed) return;
      this.snapshotInBackground([collection]);
    }, wait);
    timer.unref();
    this.buildSaves.set(collection.name, timer);
  }

  /** Snapshots every collection that changed since its last snapshot. */
  async snapshotChanged(allowCompaction: boolean): Promise<void> {
    await Promise.all(changed(this.collections).map((c) => this.snapshot(c, allowCompaction)));
  }

  /**
   * Writes what changed (no compaction: a graph rebuild can take minutes; the next snapshot does
   * it), waits for the disk work in progress, closes the logs and releases the lock. A failed
   * snapshot fails the close, but with the log on nothing acknowledged is lost.
   */
  async close(): Promise<void> {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    for (const timer of this.buildSaves.values()) clearTimeout(timer);
    this.buildSaves.clear();
    try {
      const saved = await Promise.allSettled(changed(this.collections).map((c) => this.snapshot(c, false)));
      await Promise.all(this.diskWork.values());
      const failed = saved.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      await Promise.all([...this.files.values()].map((files) => files.close()));
      this.files.clear();
      this.lock.release();
    }
  }

  private storage(): StorageOptions {
    const { dir, wal, walSnapshotBytes, indexing } = this.options;
    return {
      root: dir,
      wal,
      walSnapshotBytes,
      indexing,
      onWalFull: (name) => {
        const collection = this.collections.get(name);
        if (collection) this.snapshotInBackground([collection]);
      },
    };
  }

  private snapshotInBackground(collections = changed(this.collections)): void {
    if (this.closing) return;
    for (const collection of collections) {
      this.snapshot(collection, true).catch((err: unknown) => {
        if (this.options.onSnapshotError) this.options.onSnapshotError(err, collection.name);
        else process.emitWarning(`snapshot of vector collection "${collection.name}" failed: ${String(err)}`);
      });
    }
  }

  /** Runs `work` once the disk work queued for collection `name` is done. */
  private inTurn<T>(name: string, work: () => Promise<T>): Promise<T> {
    const next = (this.diskWork.get(name) ?? Promise.resolve()).then(work);
    const tail = next.then(
      () => {},
      () => {},
    );
    this.diskWork.set(name, tail);
    void tail.then(() => {
      if (this.diskWork.get(name) === tail) this.diskWork.delete(name);
    });
    return next;
  }
}

function changed(collections: ReadonlyMap<string, Collection>): Collection[] {
  return [...collections.values()].filter((c) => c.unsaved);
}
