/**
 * The write-ahead log of one embedded collection: segment files `wal-<n>.log` in the collection's
 * directory (record format in wal-record.ts). A mutation is framed into memory when it is applied,
 * and its call resolves once an fdatasync covers it.
 *
 * Group commit: while one group is being written and fdatasynced, the records of every call that
 * arrives meanwhile collect in the next group; when the fdatasync returns, that group goes out with
 * one `write` and one `fdatasync`. Under load each fdatasync carries many calls; alone, a call waits
 * for one.
 *
 * Segments follow snapshots: `rotate(n)` is called at the instant snapshot n captures the collection,
 * so segment n holds exactly the mutations that snapshot lacks, and the segments before n can be
 * deleted once the snapshot is committed. A failed write or fdatasync fails every waiting call and
 * every later one (UNAVAILABLE): after a failed fdatasync the kernel may have dropped the pages, so
 * nothing written since can be trusted to be on disk until the database is reopened.
 */
import {
  closeSync,
  fdatasync,
  fstatSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describeError, invalidArgument, LatticeError } from '../../../errors.js';
import type { ValidatedPoint, ValidatedSpec } from '../../validation.js';
import type { Payload } from '../../vector-db.js';
import { syncDirectory } from './fs-sync.js';
import {
  decodeSegment,
  MAX_RECORD_BYTES,
  RecordBuffer,
  SEGMENT_MAGIC,
  upsertJson,
  type WalRecord,
} from './wal-record.js';

const fdatasyncAsync = promisify(fdatasync);
/**
 * A group this large is written as soon as the log is idle instead of at the end of the current
 * microtasks: fdatasync then runs while the next calls are applied (a call of 500 128-d points is
 * 256 KiB), and a disk syncs one large group in about the time of several smaller ones anyway.
 */
const WRITE_AT_ONCE_BYTES = 64 * 1024;
const SEGMENT_NAME = /^wal-(\d+)\.log$/;

export const segmentPath = (dir: string, segment: number) => join(dir, `wal-${segment}.log`);

interface Segment {
  number: number;
  fd: number;
  /**
   * Its directory entry is not known to be on disk yet: the first group fsyncs the directory too
   * (also for a segment reopened after a crash, whose creator may have died before doing so).
   */
  dirPending: boolean;
}

/** The records of some calls, written together; every call in it shares its promise. */
class Group {
  readonly done: Promise<void>;
  resolve!: () => void;
  reject!: (err: Error) => void;

  constructor(
    readonly segment: Segment,
    readonly records: RecordBuffer,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // A caller whose in-memory apply threw never awaits its group; that must not be an unhandled rejection.
    this.done.catch(() => {});
  }
}

export interface WriteAheadLogOptions {
  /** The collection's name, for messages. */
  name: string;
  /** Called once the current segment holds more than `fullBytes` (so the owner can snapshot early). */
  onFull?: () => void;
  fullBytes?: number;
}

export interface ReplayResult {
  /** The newest segment number found, if any. */
  last: number | undefined;
  records: number;
}

export class WriteAheadLog {
  /** Groups written (one `write` and one fdatasync each) and the records they carried. */
  readonly stats = { groups: 0, records: 0 };
  private segment: Segment;
  private readonly retired: Segment[] = [];
  private readonly queued: Group[] = [];
  private writing: Group | undefined;
  private flushScheduled = false;
  private spare: RecordBuffer | undefined;
  private failure: LatticeError | undefined;
  private closed = false;
  private bytesInSegment = 0;
  private fullSignalled = false;

  private constructor(
    private readonly dir: string,
    segment: number,
    private readonly options: WriteAheadLogOptions,
  ) {
    this.segment = openSegment(dir, segment);
  }

  /** Opens segment `segment` of `dir` for appending (created if missing). */
  static open(dir: string, segment: number, options: WriteAheadLogOptions): WriteAheadLog {
    return new WriteAheadLog(dir, segment, options);
  }

  /**
   * Replays segments `from` and later, oldest first, and deletes older ones (a snapshot covers them).
   * A torn tail of the newest segment (a crash mid-write, never acknowledged) is cut off; damage in
   * an older segment fails with FAILED_PRECONDITION rather than dropping what follows it.
   */
  static replay(dir: string, from: number, apply: (record: WalRecord) => void): ReplayResult {
    const segments = listSegments(dir);
    for (const n of segments) if (n < from) rmSync(segmentPath(dir, n), { force: true });
    const kept = segments.filter((n) => n >= from);
    let records = 0;
    kept.forEach((n, i) => {
      const path = segmentPath(dir, n);
      const data = readFileSync(path);
      if (
        data.length >= SEGMENT_MAGIC.length &&
        !data.subarray(0, SEGMENT_MAGIC.length).equals(SEGMENT_MAGIC)
      ) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `${path} is not a write-ahead log segment of this format`,
          {
            field: 'dir',
          },
        );
      }
      const decoded = decodeSegment(data);
      const newest = i === kept.length - 1;
      const empty = decoded.records.length === 0 && data.length < SEGMENT_MAGIC.length;
      if (decoded.problem && !newest && !empty) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `write-ahead log ${path} is damaged at byte ${decoded.end} (${decoded.problem}); later segments depend on it`,
          { field: 'dir' },
        );
      }
      for (const record of decoded.records) apply(record);
      records += decoded.records.length;
      if (decoded.end < data.length && (newest || empty)) {
        if (newest && decoded.end > 0) {
          process.emitWarning(
            `write-ahead log ${path}: dropped ${data.length - decoded.end} bytes after byte ${decoded.end} (${decoded.problem}), a write cut short by a crash`,
          );
        }
        // Appends must follow the last good record, not garbage.
        const fd = openSync(path, 'r+');
        try {
          ftruncateSync(fd, decoded.end);
        } finally {
          closeSync(fd);
        }
      }
    });
    return { last: kept.at(-1), records };
  }

  appendCreate(spec: ValidatedSpec): Promise<void> {
    const group = this.groupForAppend();
    group.records.appendCreate(spec);
    return this.appended(group);
  }

  /**
   * Frames an upsert; INVALID_ARGUMENT (nothing framed) when one record could not hold it. Called
   * before the points are applied, so a refused call changes nothing.
   */
  appendUpsert(points: readonly ValidatedPoint[], dimension: number): Promise<void> {
    this.assertWritable();
    const json = upsertJson(points);
    const bytes = RecordBuffer.upsertBound(points, dimension, json);
    if (bytes > MAX_RECORD_BYTES) {
      throw invalidArgument(
        `an upsert of ${points.length} points at dimension ${dimension} takes ${bytes} bytes, more than one write-ahead log record holds (${MAX_RECORD_BYTES}); split it into smaller calls`,
        'points',
      );
    }
    const group = this.groupForAppend();
    group.records.appendUpsert(points, dimension, json);
    return this.appended(group);
  }

  appendDelete(ids: readonly string[]): Promise<void> {
    const group = this.groupForAppend();
    group.records.appendDelete(ids);
    return this.appended(group);
  }

  appendSetPayload(ids: readonly string[], payload: Payload): Promise<void> {
    const group = this.groupForAppend();
    group.records.appendSetPayload(ids, payload);
    return this.appended(group);
  }

  /** Resolves once everything appended so far is on disk. */
  durable(): Promise<void> {
    return (this.queued.at(-1) ?? this.writing)?.done ?? Promise.resolve();
  }

  /**
   * Later appends go to segment `segment`. Synchronous, so the caller can switch at the exact point
   * a snapshot captures the collection.
   */
  rotate(segment: number): void {
    if (this.closed || segment === this.segment.number) return;
    this.retired.push(this.segment);
    this.segment = openSegment(this.dir, segment);
    this.bytesInSegment = 0;
    this.fullSignalled = false;
    this.closeRetired();
  }

  /** Writes what is pending, then closes the files; later appends fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.durable().catch(() => {});
    this.retired.push(this.segment);
    this.closeRetired();
  }

  private assertWritable(): void {
    if (this.failure) throw this.failure;
    if (this.closed) {
      throw new LatticeError(
        'UNAVAILABLE',
        `write-ahead log of vector collection "${this.options.name}" is closed`,
      );
    }
  }

  private groupForAppend(): Group {
    this.assertWritable();
    const last = this.queued.at(-1);
    if (last && last.segment === this.segment) return last;
    const group = new Group(this.segment, this.spare ?? new RecordBuffer());
    this.spare = undefined;
    this.queued.push(group);
    return group;
  }

  private appended(group: Group): Promise<void> {
    if (this.writing) return group.done; // the running flush takes this group next
    if (group.records.length >= WRITE_AT_ONCE_BYTES) {
      // Worth a write of its own: its fdatasync then overlaps the work of the calls that follow.
      void this.flush();
    } else if (!this.flushScheduled) {
      // A microtask, not at once: calls resumed together (by the previous group's fdatasync) join one group.
      this.flushScheduled = true;
      queueMicrotask(() => {
        this.flushScheduled = false;
        void this.flush();
      });
    }
    return group.done;
  }

  private async flush(): Promise<void> {
    if (this.writing) return;
    for (let group = this.queued.shift(); group; group = this.queued.shift()) {
      this.writing = group;
      const { segment, records } = group;
      try {
        if (this.failure) throw this.failure;
        writeAll(segment.fd, records.bytes, records.length);
        await fdatasyncAsync(segment.fd);
        this.stats.groups++;
        this.stats.records += records.count;
        if (segment.dirPending) {
          segment.dirPending = false;
          await syncDirectory(this.dir);
        }
        group.resolve();
      } catch (err) {
        this.failure ??= new LatticeError(
          'UNAVAILABLE',
          `write-ahead log of vector collection "${this.options.name}" failed (${describeError(err)}); writes are refused until the database is reopened`,
          { cause: err },
        );
        group.reject(this.failure);
      } finally {
        this.writing = undefined;
      }
      if (segment === this.segment) this.noteBytes(records.length);
      records.clear();
      this.spare ??= records;
      this.closeRetired();
    }
  }

  private noteBytes(bytes: number): void {
    this.bytesInSegment += bytes;
    const { fullBytes, onFull } = this.options;
    if (onFull && fullBytes !== undefined && !this.fullSignalled && this.bytesInSegment >= fullBytes) {
      this.fullSignalled = true;
      onFull();
    }
  }

  /** Closes retired segments no group still has to write to. */
  private closeRetired(): void {
    for (let i = this.retired.length - 1; i >= 0; i--) {
      const segment = this.retired[i]!;
      if (this.writing?.segment === segment || this.queued.some((g) => g.segment === segment)) continue;
      closeSync(segment.fd);
      this.retired.splice(i, 1);
    }
  }
}

/** Segment numbers present in `dir`, ascending. */
export function listSegments(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of names) {
    const match = SEGMENT_NAME.exec(name);
    if (match) found.push(Number(match[1]));
  }
  return found.sort((a, b) => a - b);
}

/** Deletes segments older than `segment` (a committed snapshot holds what they logged). */
export function removeSegmentsBefore(dir: string, segment: number): void {
  for (const n of listSegments(dir)) if (n < segment) rmSync(segmentPath(dir, n), { force: true });
}

function openSegment(dir: string, number: number): Segment {
  const fd = openSync(segmentPath(dir, number), 'a');
  if (fstatSync(fd).size === 0) writeAll(fd, SEGMENT_MAGIC, SEGMENT_MAGIC.length);
  return { number, fd, dirPending: true };
}

function writeAll(fd: number, bytes: Uint8Array, length: number): void {
  let offset = 0;
  while (offset < length) offset += writeSync(fd, bytes, offset, length - offset);
}
