/**
 * The memory queue's write-ahead journal: an append-only sequence of segment files in one
 * directory, replayed on open so that a restarted process continues with every published and not
 * yet acknowledged message.
 *
 * - Durability: every record is written to the file (a `write` system call) before the operation
 *   that produced it resolves, so killing the process loses nothing. Records appended in the same
 *   moment share one write, made before any other code runs (a microtask queued by the first of
 *   them), and at the latest when an operation asks for durability. Against power loss, `fsync`
 *   decides: `always` (default) resolves publish and settle calls only after an fdatasync covering
 *   them (concurrent calls share one fdatasync), `interval` fdatasyncs every `fsyncIntervalMs`,
 *   `never` leaves it to the OS.
 * - Framing: `u32 length | u32 crc32 | body`, body = `u8 type | u32 meta length | JSON meta |
 *   payload`. Deliveries and acknowledgements of one partition appended in the same moment share one
 *   record (a run): its meta names the topic, group and partition once, its payload holds the
 *   sequences (and delivery counts) as float64 values; replay applies them one by one, in order.
 *   Journals written before runs existed (a record per delivery and per acknowledgement) replay as
 *   they are. A torn record at the end of the newest segment (a crash mid-write) is cut off on open;
 *   damage anywhere else fails the open rather than silently dropping messages.
 * - Compaction: a segment is closed at `segmentBytes` and the next starts with a snapshot of the
 *   topics and groups. Segments are deleted oldest first once none of their messages is retained
 *   any more (acknowledged by every group, or past retention) and their de-duplication window has
 *   passed, so the directory stays proportional to the unacknowledged backlog.
 * - One process at a time: a lock file beside the directory holds the owner's pid; a lock left by a dead process is taken
 *   over, a live owner fails the open with FAILED_PRECONDITION.
 */
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { type DirLock, lockDirectory } from '../../dir-lock.js';
import { LatticeError } from '../../errors.js';
import type { TopicConfig } from '../queue.js';

export type FsyncPolicy = 'always' | 'interval' | 'never';

export interface JournalOptions {
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  segmentBytes: number;
}

export type JournalRecord =
  | { type: 'topic'; config: TopicConfig; nextSequence: number }
  | { type: 'deleteTopic'; topic: string }
  | { type: 'group'; topic: string; group: string }
  | {
      type: 'publish';
      topic: string;
      partition: number;
      sequence: number;
      key?: string;
      messageId?: string;
      headers: Record<string, string>;
      publishedAtMs: number;
      payload: Uint8Array;
    }
  | { type: 'deliver'; topic: string; group: string; partition: number; sequence: number; count: number }
  | { type: 'ack'; topic: string; group: string; partition: number; sequence: number };

const TYPE_CODES: Record<JournalRecord['type'], number> = {
  topic: 1,
  deleteTopic: 2,
  group: 3,
  publish: 4,
  deliver: 5,
  ack: 6,
};
/** Runs of deliveries (`sequence, count` pairs) and of acknowledgements (sequences) of one partition. */
const RUN_CODES = { deliver: 7, ack: 8 } as const;
const TYPES_BY_CODE = new Map<number, string>([
  ...Object.entries(TYPE_CODES).map(([type, code]) => [code, type] as const),
  [RUN_CODES.deliver, 'deliverRun'],
  [RUN_CODES.ack, 'ackRun'],
]);
const FRAME_HEADER = 8;
const SEGMENT_NAME = /^segment-(\d{12})\.log$/;
const fdatasyncAsync = promisify(fdatasync);

type RunRecord = Extract<JournalRecord, { type: 'deliver' | 'ack' }>;

/** Deliveries or acknowledgements of one partition appended in the current moment. */
interface Run {
  type: RunRecord['type'];
  topic: string;
  group: string;
  partition: number;
  /** Sequences, each followed by its delivery count in a deliver run. */
  values: number[];
}

interface Segment {
  id: number;
  path: string;
  /** Messages in this segment still retained by the queue. */
  live: number;
  /** The segment is kept at least until then, so de-duplication survives a restart. */
  holdUntilMs: number;
}

/** Why a second opener is refused, and what to do instead (a one-off command such as `lattice vss replay`). */
const ONE_OWNER_HINT =
  'the in-process queue is journaled by the one process that owns it: stop that process before running a command on its journal, or share a queue server (NATS JetStream: LATTICE_QUEUE=jetstream)';

export class Journal {
  readonly dir: string;
  readonly #options: JournalOptions;
  readonly #segments: Segment[] = [];
  readonly #snapshot: () => JournalRecord[];
  #fd = -1;
  #activeBytes = 0;
  #written = 0;
  /** Encoded records not yet written, and their size. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Open runs, written after the pending records (see #closeRuns); their size when encoded, roughly. */
  #runs: Run[] = [];
  #lastRun = 0;
  #runBytes = 0;
  #writeQueued = false;
  #durable: Promise<void> | undefined;
  /** A write that failed: the journal no longer matches the queue's state, so it takes no more. */
  #failure: unknown;
  #synced = 0;
  #syncing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  readonly #lock: DirLock;

  private constructor(dir: string, options: JournalOptions, snapshot: () => JournalRecord[], lock: DirLock) {
    this.dir = dir;
    this.#options = options;
    this.#snapshot = snapshot;
    this.#lock = lock;
  }

  /**
   * Locks `dir`, replays every record through `apply` (with the id of the segment holding it) and
   * opens the newest segment for appending. `snapshot` lists the records a new segment starts with.
   */
  static open(
    dir: string,
    options: JournalOptions,
    apply: (record: JournalRecord, segment: number) => void,
    snapshot: () => JournalRecord[],
  ): Journal {
    mkdirSync(dir, { recursive: true });
    const lock = lockDirectory(dir, 'queue journal', ONE_OWNER_HINT);
    const journal = new Journal(dir, options, snapshot, lock);
    try {
      journal.#replay(apply);
    } catch (err) {
      lock.release();
      throw err;
    }
    if (options.fsync === 'interval') {
      journal.#timer = setInterval(() => void journal.sync().catch(() => undefined), options.fsyncIntervalMs);
      journal.#timer.unref();
    }
    return journal;
  }

  /**
   * Adds records (written before any other code runs, see above); the segment id holding them.
   * Throws when the journal is closed or a write failed.
   */
  append(records: readonly JournalRecord[]): number {
    if (this.#closed) throw new LatticeError('FAILED_PRECONDITION', `queue journal ${this.dir} is closed`);
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#activeBytes + this.#pendingBytes + this.#runBytes >= this.#options.segmentBytes) {
      this.#write();
      this.#roll();
    }
    for (const record of records) {
      if (record.type === 'deliver' || record.type === 'ack') {
        this.#addToRun(record);
        continue;
      }
      // Topic and group changes keep their place among deliveries and acknowledgements. Publishes
      // need not: a message is always published before it is delivered.
      if (record.type !== 'publish') this.#closeRuns();
      const frame = encode(record);
      this.#pending.push(frame);
      this.#pendingBytes += frame.length;
    }
    if (!this.#writeQueued) {
      this.#writeQueued = true;
      queueMicrotask(() => {
        this.#writeQueued = false;
        try {
          this.#write();
        } catch {
          // Kept in #failure: the next append or durable() reports it to its caller.
        }
      });
    }
    return this.#active.id;
  }

  #addToRun(record: RunRecord): void {
    let run = this.#runs[this.#lastRun];
    if (
      run === undefined ||
      run.type !== record.type ||
      run.partition !== record.partition ||
      run.group !== record.group ||
      run.topic !== record.topic
    ) {
      const found = this.#runs.findIndex(
        (r) =>
          r.type === record.type &&
          r.partition === record.partition &&
          r.group === record.group &&
          r.topic === record.topic,
      );
      if (found >= 0) this.#lastRun = found;
      else {
        this.#lastRun = this.#runs.length;
        this.#runs.push({
          type: record.type,
          topic: record.topic,
          group: record.group,
          partition: record.partition,
          values: [],
        });
        this.#runBytes += FRAME_HEADER + 5 + 64 + record.topic.length + record.group.length;
      }
      run = this.#runs[this.#lastRun]!;
    }
    run.values.push(record.sequence);
    if (record.type === 'deliver') {
      run.values.push(record.count);
      this.#runBytes += 16;
    } else this.#runBytes += 8;
  }

  /**
   * Encodes the open runs after the pending records: every delivery run before the acknowledgement
   * runs, since a message is never delivered again once acknowledged, so replay meets a delivery of
   * a sequence before its acknowledgement, as it happened.
   */
  #closeRuns(): void {
    if (this.#runs.length === 0) return;
    for (const type of ['deliver', 'ack'] as const) {
      for (const run of this.#runs) {
        if (run.type !== type) continue;
        const frame = encodeRun(run);
        this.#pending.push(frame);
        this.#pendingBytes += frame.length;
      }
    }
    this.#runs = [];
    this.#lastRun = 0;
    this.#runBytes = 0;
  }

  /** Writes the pending records in one system call. */
  #write(): void {
    if (this.#failure !== undefined) throw this.#failure;
    this.#closeRuns();
    if (this.#pendingBytes === 0 || this.#closed) return;
    const frame =
      this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending, this.#pendingBytes);
    this.#pending = [];
    this.#pendingBytes = 0;
    try {
      writeAll(this.#fd, frame);
    } catch (err) {
      this.#failure = err;
      throw err;
    }
    this.#activeBytes += frame.length;
    this.#written += frame.length;
  }

  /** Resolves once everything appended so far is fdatasync'ed; the `always` policy awaits this. */
  async sync(): Promise<void> {
    this.#write();
    const target = this.#written;
    while (this.#synced < target && !this.#closed) {
      this.#syncing ??= this.#syncOnce().finally(() => {
        this.#syncing = undefined;
      });
      await this.#syncing;
    }
  }

  /** Resolves when a publish or settle may report success under the fsync policy. */
  durable(): Promise<void> {
    // One promise for every caller of this moment, settled after the queued write (which then
    // carries every record they appended) and, under `always`, the fdatasync covering it.
    this.#durable ??= Promise.resolve().then(() => {
      this.#durable = undefined;
      this.#write();
      return this.#options.fsync === 'always' ? this.sync() : undefined;
    });
    return this.#durable;
  }

  /** Counts one more retained message in `segment`, kept at least until `holdUntilMs`. */
  retain(segment: number, holdUntilMs: number): void {
    const s = this.#segment(segment);
    if (!s) return;
    s.live++;
    if (holdUntilMs > s.holdUntilMs) s.holdUntilMs = holdUntilMs;
  }

  /** One message of `segment` is no longer retained. */
  release(segment: number): void {
    const s = this.#segment(segment);
    if (s && s.live > 0) s.live--;
  }

  /** Deletes the oldest segments that hold nothing retained any more. Returns how many. */
  compact(nowMs: number): number {
    let deleted = 0;
    while (this.#segments.length > 1) {
      const oldest = this.#segments[0]!;
      if (oldest.live > 0 || oldest.holdUntilMs > nowMs) break;
      rmSync(oldest.path, { force: true });
      this.#segments.shift();
      deleted++;
    }
    return deleted;
  }

  /** Segment files on disk, oldest first (for tests and health output). */
  segmentCount(): number {
    return this.#segments.length;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    clearInterval(this.#timer);
    try {
      this.#write();
    } catch {
      // Reported to the operations that awaited durability; closing goes on.
    }
    if (this.#options.fsync !== 'never' && this.#failure === undefined) await this.sync();
    this.#closed = true;
    closeSync(this.#fd);
    this.#lock.release();
  }

  get #active(): Segment {
    return this.#segments[this.#segments.length - 1]!;
  }

  #segment(id: number): Segment | undefined {
    // Segments are few and ids ascend; search from the newest, where most lookups land.
    for (let i = this.#segments.length - 1; i >= 0; i--) {
      const s = this.#segments[i]!;
      if (s.id === id) return s;
      if (s.id < id) return undefined;
    }
    return undefined;
  }

  async #syncOnce(): Promise<void> {
    const upTo = this.#written;
    try {
      await fdatasyncAsync(this.#fd);
    } catch (err) {
      // The segment was closed by a roll meanwhile, which synced it itself.
      if ((err as NodeJS.ErrnoException).code !== 'EBADF') throw err;
    }
    if (upTo > this.#synced) this.#synced = upTo;
  }

  #replay(apply: (record: JournalRecord, segment: number) => void): void {
    const files = readdirSync(this.dir)
      .map((name) => ({ name, match: SEGMENT_NAME.exec(name) }))
      .filter((f) => f.match)
      .map((f) => ({ id: Number(f.match![1]), path: join(this.dir, f.name) }))
      .sort((a, b) => a.id - b.id);
    for (const [index, file] of files.entries()) {
      const segment: Segment = { ...file, live: 0, holdUntilMs: 0 };
      this.#segments.push(segment);
      const data = readFileSync(file.path);
      const last = index === files.length - 1;
      const end = decodeAll(data, file.path, last, (record) => apply(record, file.id));
      if (end < data.length) {
        // Torn tail of the newest segment: a crash mid-write. Cut it so appends follow good records.
        const fd = openSync(file.path, 'r+');
        ftruncateSync(fd, end);
        closeSync(fd);
      }
    }
    if (this.#segments.length === 0) {
      this.#roll();
      return;
    }
    this.#fd = openSync(this.#active.path, 'a');
    this.#activeBytes = fstatSync(this.#fd).size;
  }

  /** Closes the active segment and starts the next with a snapshot of topics and groups. */
  #roll(): void {
    if (this.#fd >= 0) {
      // A closing segment is synced synchronously: once per segmentBytes, and later syncs cannot cover it.
      if (this.#options.fsync !== 'never') fdatasyncSync(this.#fd);
      closeSync(this.#fd);
      this.#synced = this.#written;
    }
    const id = (this.#segments.length ? this.#active.id : 0) + 1;
    const path = join(this.dir, `segment-${String(id).padStart(12, '0')}.log`);
    this.#fd = openSync(path, 'a');
    this.#segments.push({ id, path, live: 0, holdUntilMs: 0 });
    const snapshot = Buffer.concat(this.#snapshot().map(encode));
    writeAll(this.#fd, snapshot);
    this.#activeBytes = snapshot.length;
    this.#written += snapshot.length;
    this.compact(Date.now());
  }
}

function encode(record: JournalRecord): Buffer {
  let meta: unknown = record;
  let payload: Uint8Array | undefined;
  if (record.type === 'publish') {
    const { payload: body, ...rest } = record;
    meta = rest;
    payload = body;
  }
  return frameOf(TYPE_CODES[record.type], meta, payload);
}

function encodeRun(run: Run): Buffer {
  const meta = { topic: run.topic, group: run.group, partition: run.partition };
  const values = Buffer.allocUnsafe(run.values.length * 8);
  for (let i = 0; i < run.values.length; i++) values.writeDoubleLE(run.values[i]!, i * 8);
  return frameOf(RUN_CODES[run.type], meta, values);
}

function frameOf(code: number, meta: unknown, payload: Uint8Array | undefined): Buffer {
  const json = JSON.stringify(meta);
  const jsonLength = Buffer.byteLength(json);
  const bodyLength = 5 + jsonLength + (payload?.length ?? 0);
  const frame = Buffer.allocUnsafe(FRAME_HEADER + bodyLength);
  frame.writeUInt8(code, FRAME_HEADER);
  frame.writeUInt32LE(jsonLength, FRAME_HEADER + 1);
  frame.write(json, FRAME_HEADER + 5);
  if (payload) frame.set(payload, FRAME_HEADER + 5 + jsonLength);
  frame.writeUInt32LE(bodyLength, 0);
  frame.writeUInt32LE(crc32(frame.subarray(FRAME_HEADER)), 4);
  return frame;
}

/** Applies every whole record; returns the offset after the last good one. */
function decodeAll(
  data: Buffer,
  path: string,
  last: boolean,
  apply: (record: JournalRecord) => void,
): number {
  let offset = 0;
  while (offset < data.length) {
    const problem = frameProblem(data, offset);
    if (problem) {
      if (last) return offset;
      throw new LatticeError('INTERNAL', `queue journal ${path} is damaged at byte ${offset}: ${problem}`);
    }
    const length = data.readUInt32LE(offset);
    const body = data.subarray(offset + FRAME_HEADER, offset + FRAME_HEADER + length);
    const code = body.readUInt8(0);
    const type = TYPES_BY_CODE.get(code);
    const metaLength = body.readUInt32LE(1);
    const meta = JSON.parse(body.subarray(5, 5 + metaLength).toString('utf8')) as JournalRecord;
    if (code === RUN_CODES.deliver || code === RUN_CODES.ack) {
      replayRun(code, meta as unknown as Omit<Run, 'type' | 'values'>, body.subarray(5 + metaLength), apply);
      offset += FRAME_HEADER + length;
      continue;
    }
    if (type === 'publish' && meta.type === 'publish') {
      // Copy: the record outlives this file buffer.
      meta.payload = new Uint8Array(body.subarray(5 + metaLength));
    }
    apply(meta);
    offset += FRAME_HEADER + length;
  }
  return offset;
}

/** Applies a run's deliveries or acknowledgements one by one, as the records they replace. */
function replayRun(
  code: number,
  at: Omit<Run, 'type' | 'values'>,
  bytes: Buffer,
  apply: (record: JournalRecord) => void,
): void {
  const { topic, group, partition } = at;
  const value = (i: number) => bytes.readDoubleLE(i * 8);
  const count = Math.floor(bytes.length / 8);
  if (code === RUN_CODES.deliver) {
    for (let i = 0; i + 1 < count; i += 2) {
      apply({ type: 'deliver', topic, group, partition, sequence: value(i), count: value(i + 1) });
    }
  } else {
    for (let i = 0; i < count; i++) apply({ type: 'ack', topic, group, partition, sequence: value(i) });
  }
}

function frameProblem(data: Buffer, offset: number): string | undefined {
  if (data.length - offset < FRAME_HEADER) return 'truncated frame header';
  const length = data.readUInt32LE(offset);
  if (length < 5 || data.length - offset - FRAME_HEADER < length) return 'truncated record';
  const body = data.subarray(offset + FRAME_HEADER, offset + FRAME_HEADER + length);
  if (crc32(body) !== data.readUInt32LE(offset + 4)) return 'checksum mismatch';
  if (!TYPES_BY_CODE.has(body.readUInt8(0)) || body.readUInt32LE(1) > length - 5) return 'unknown record';
  return undefined;
}

function writeAll(fd: number, buffer: Buffer): void {
  let offset = 0;
  while (offset < buffer.length) offset += writeSync(fd, buffer, offset);
}
