/**
 * The files of one embedded collection, in `<dir>/<collection>/`:
 *
 *   <seq>/         snapshots (snapshot.ts); the newest complete one is loaded
 *   wal-<n>.log    the write-ahead log (write-ahead-log.ts): segment n holds the mutations made after
 *                  snapshot n captured the collection; wal-0 those since its creation, starting with
 *                  the `create` record that makes the collection itself durable
 *
 * Opening loads snapshot S (0 when there is none) and replays segments S, S+1, … in order, so every
 * acknowledged write is back. A directory without a snapshot whose log holds no whole record is a
 * creation cut short by a crash (never acknowledged) and is removed. Dropping renames the directory
 * to `.dropped-…` (collection names never start with a dot) before deleting it, so a crash in the
 * middle never leaves a half-deleted collection to load.
 */

import { mkdirSync } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { LatticeError } from '../../../errors.js';
import {
  sameSpec,
  type ValidatedSpec,
  validateCollectionName,
  validateCollectionSpec,
} from '../../validation.js';
import type { IndexingOptions } from '../index/indexing-options.js';
import { syncDirectory } from '../storage/fs-sync.js';
import type { WalRecord } from '../storage/wal-record.js';
import { removeSegmentsBefore, WriteAheadLog } from '../storage/write-ahead-log.js';
import { Collection } from './collection.js';
import { loadNewestSnapshot, writeSnapshot } from './snapshot.js';

export interface StorageOptions {
  /** The database directory. */
  root: string;
  /** Log every mutation ahead and acknowledge it once on disk; false keeps snapshots only. */
  wal: boolean;
  /** A collection whose log segment grows past this many bytes asks for an early snapshot. */
  walSnapshotBytes: number;
  indexing: IndexingOptions<Collection>;
  onWalFull: (collection: string) => void;
}

export interface RecoveredCollection {
  collection: Collection;
  files: CollectionFiles;
}

const DROPPED_PREFIX = '.dropped-';

export class CollectionFiles {
  private constructor(
    private readonly options: StorageOptions,
    readonly name: string,
    /** The last snapshot number used (or log segment seen): the next snapshot takes the one after. */
    private seq: number,
    readonly wal: WriteAheadLog | undefined,
  ) {}

  get dir(): string {
    return join(this.options.root, this.name);
  }

  /** Makes a new collection durable: its directory and the log's `create` record, fsynced. */
  static async create(spec: ValidatedSpec, options: StorageOptions): Promise<CollectionFiles> {
    if (!options.wal) return new CollectionFiles(options, spec.name, 0, undefined);
    const dir = join(options.root, spec.name);
    mkdirSync(dir, { recursive: true });
    // A log left by an unacknowledged creation of the same name must not precede this one's records.
    removeSegmentsBefore(dir, Number.POSITIVE_INFINITY);
    const wal = WriteAheadLog.open(dir, 0, walOptions(spec.name, options));
    try {
      await wal.appendCreate(spec);
      await syncDirectory(options.root);
    } catch (err) {
      await wal.close();
      throw err;
    }
    return new CollectionFiles(options, spec.name, 0, wal);
  }

  /** Loads every collection under `options.root`, removing what a crash left half done. */
  static async recoverAll(options: StorageOptions): Promise<RecoveredCollection[]> {
    mkdirSync(options.root, { recursive: true });
    const recovered: RecoveredCollection[] = [];
    try {
      for (const entry of await readdir(options.root, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        if (entry.name.startsWith(DROPPED_PREFIX)) {
          await rm(join(options.root, entry.name), { recursive: true, force: true });
          continue;
        }
        if (!isCollectionName(entry.name)) continue;
        const one = await CollectionFiles.recover(entry.name, options);
        if (one) recovered.push(one);
      }
    } catch (err) {
      await Promise.all(recovered.map(({ files }) => files.close()));
      throw err;
    }
    return recovered;
  }

  private static async recover(
    name: string,
    options: StorageOptions,
  ): Promise<RecoveredCollection | undefined> {
    const dir = join(options.root, name);
    const snapshot = await loadNewestSnapshot(dir, name);
    const { indexing } = options;
    let collection: Collection | undefined;
    if (snapshot) {
      collection = new Collection(snapshot.spec, {
        store: snapshot.store,
        graph: snapshot.graph,
        indexing,
      });
      collection.savedVersion = collection.version;
      collection.savedGraphVersion = collection.graphVersion;
    }
    const from = snapshot?.seq ?? 0;
    const replayed = WriteAheadLog.replay(dir, from, (record) => {
      if (record.type === 'create') {
        const spec = validateCollectionSpec(record.spec);
        if (spec.name !== name || (collection && !sameSpec(collection.spec, spec))) {
          throw damaged(
            dir,
            `its write-ahead log creates a different collection (${JSON.stringify(record.spec)})`,
          );
        }
        collection ??= new Collection(spec, { indexing });
        return;
      }
      if (!collection)
        throw damaged(dir, 'its write-ahead log does not begin with the collection’s creation');
      if (
        record.type === 'upsert' &&
        record.points.some((p) => p.vector.length !== collection!.spec.dimension)
      ) {
        throw damaged(
          dir,
          `its write-ahead log holds vectors of another dimension than ${collection.spec.dimension}`,
        );
      }
      apply(collection, record);
    });
    if (!collection) {
      if (replayed.last !== undefined) await rm(dir, { recursive: true, force: true });
      return undefined;
    }
    collection.markRecovered();
    const segment = replayed.last ?? from;
    const wal = options.wal ? WriteAheadLog.open(dir, segment, walOptions(name, options)) : undefined;
    return { collection, files: new CollectionFiles(options, name, segment, wal) };
  }

  /**
   * Writes the next snapshot; the log switches to a new segment at the capture, and the segments it
   * replaces are deleted once the snapshot is committed.
   */
  async snapshot(collection: Collection): Promise<void> {
    const seq = ++this.seq;
    await writeSnapshot(this.options.root, collection, seq, () => this.wal?.rotate(seq));
    removeSegmentsBefore(this.dir, seq);
  }

  /** Removes the collection's files (after the log's pending writes, which then no longer matter). */
  async drop(): Promise<void> {
    await this.wal?.close();
    const grave = join(this.options.root, `${DROPPED_PREFIX}${this.name}-${Date.now()}`);
    try {
      await rename(this.dir, grave);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // never written to disk
      throw err;
    }
    await syncDirectory(this.options.root);
    await rm(grave, { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await this.wal?.close();
  }
}

function walOptions(name: string, options: StorageOptions) {
  return { name, fullBytes: options.walSnapshotBytes, onFull: () => options.onWalFull(name) };
}

function apply(collection: Collection, record: Exclude<WalRecord, { type: 'create' }>): void {
  switch (record.type) {
    case 'upsert':
      collection.upsert(record.points);
      return;
    case 'delete':
      collection.delete(record.ids);
      return;
    case 'setPayload':
      collection.setPayload(record.ids, record.payload);
      return;
  }
}

function isCollectionName(name: string): boolean {
  try {
    validateCollectionName(name);
    return true;
  } catch {
    return false;
  }
}

function damaged(dir: string, why: string): LatticeError {
  return new LatticeError('FAILED_PRECONDITION', `vector collection ${dir} cannot be loaded: ${why}`, {
    field: 'dir',
  });
}
