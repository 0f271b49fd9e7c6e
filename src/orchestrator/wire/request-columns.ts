/**
 * Decoding a PredictRequest's targets, pairs and slates straight into columns: offsets of each
 * value in the request bytes, ids in one array, indices in one Int32Array. The generated decoder
 * builds a Target object, an array and a view per value; for 100,000 targets those all live until
 * the request ends, so every scavenge during the request copies them (the load test's profile: the
 * garbage collector took as much CPU as decoding). Each element is read with the same reader calls,
 * in the same order, as the generated `Target.decode` / `TargetPair.decode` / `TargetSlate.decode`
 * (unknown fields skipped, last scalar wins, packed and unpacked indices, a tag 0 or end-group ends
 * the element), so the columns hold exactly what the messages would (tested field by field against
 * the generated decoder in test/orchestrator/api/request-columns.test.ts).
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';
import type { PairRows, SlateRows, TargetRows } from '../engine/request-rows.js';

/** A growable Int32Array. */
class IntList {
  data: Int32Array;
  length = 0;
  constructor(capacity = 64) {
    this.data = new Int32Array(capacity);
  }
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Int32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
}

/** The reader of one element: the whole request's reader bounded to the element's end. */
type BoundedReader = BinaryReader & { len: number };

/** Per-row values as offsets into the request bytes: row r's values are entries `starts[r]` to `starts[r + 1]`. */
abstract class ColumnRows {
  /** Value index where each row starts; one more entry than rows. */
  protected readonly starts = new IntList();
  private readonly from = new IntList();
  private readonly length = new IntList();
  count = 0;

  constructor(readonly source: Uint8Array) {
    this.starts.push(0);
  }

  protected addValue(reader: BinaryReader): void {
    // reader.bytes() without its view: the same length read and bounds check.
    const length = reader.uint32();
    const from = reader.pos;
    reader.pos += length;
    if (reader.pos > reader.len) throw new RangeError('premature EOF');
    this.from.push(from);
    this.length.push(length);
  }

  protected endRow(): void {
    this.count++;
    this.starts.push(this.from.length);
  }

  valueCount(row: number): number {
    return this.starts.data[row + 1]! - this.starts.data[row]!;
  }
  valueLength(row: number, column: number): number {
    return this.length.data[this.starts.data[row]! + column]!;
  }
  value(row: number, column: number): Uint8Array {
    const v = this.starts.data[row]! + column;
    const from = this.from.data[v]!;
    return this.source.subarray(from, from + this.length.data[v]!);
  }
  valueSource(): Uint8Array {
    return this.source;
  }
  valueFrom(row: number, column: number): number {
    return this.from.data[this.starts.data[row]! + column]!;
  }
}

/** Reads `[from, to)` of `reader`'s buffer as one element: the reader's bounds become the element's. */
export function boundTo(reader: BinaryReader, from: number, to: number): BoundedReader {
  const bounded = reader as BoundedReader;
  bounded.pos = from;
  bounded.len = to;
  return bounded;
}

export class TargetColumns extends ColumnRows implements TargetRows {
  private readonly ids: string[] = [];

  /** Adds the Target encoded at `[from, to)` (as `Target.decode(bytes.subarray(from, to))`). */
  add(reader: BinaryReader, from: number, to: number): void {
    const r = boundTo(reader, from, to);
    let id = '';
    while (r.pos < to) {
      const tag = r.uint32();
      if (tag === 10) {
        id = r.string();
        continue;
      }
      if (tag === 18) {
        this.addValue(r);
        continue;
      }
      if ((tag & 7) === 4 || tag === 0) break;
      r.skip(tag & 7);
    }
    this.ids.push(id);
    this.endRow();
  }

  id(row: number): string {
    return this.ids[row]!;
  }
}

export class PairColumns extends ColumnRows implements PairRows {
  private readonly firsts = new IntList();
  private readonly seconds = new IntList();

  /** Adds the TargetPair encoded at `[from, to)`. */
  add(reader: BinaryReader, from: number, to: number): void {
    const r = boundTo(reader, from, to);
    let first = 0;
    let second = 0;
    while (r.pos < to) {
      const tag = r.uint32();
      if (tag === 8) first = r.int32();
      else if (tag === 16) second = r.int32();
      else if (tag === 26) this.addValue(r);
      else {
        if ((tag & 7) === 4 || tag === 0) break;
        r.skip(tag & 7);
      }
    }
    this.firsts.push(first);
    this.seconds.push(second);
    this.endRow();
  }

  first(row: number): number {
    return this.firsts.data[row]!;
  }
  second(row: number): number {
    return this.seconds.data[row]!;
  }
}

export class SlateColumns extends ColumnRows implements SlateRows {
  private readonly indexStarts = new IntList();
  private readonly flat = new IntList();

  constructor(source: Uint8Array) {
    super(source);
    this.indexStarts.push(0);
  }

  /** Adds the TargetSlate encoded at `[from, to)`. */
  add(reader: BinaryReader, from: number, to: number): void {
    const r = boundTo(reader, from, to);
    while (r.pos < to) {
      const tag = r.uint32();
      if (tag === 8) this.flat.push(r.int32());
      else if (tag === 10) {
        const end = r.uint32() + r.pos;
        while (r.pos < end) this.flat.push(r.int32());
      } else if (tag === 18) this.addValue(r);
      else {
        if ((tag & 7) === 4 || tag === 0) break;
        r.skip(tag & 7);
      }
    }
    this.indexStarts.push(this.flat.length);
    this.endRow();
  }

  indices(row: number): Int32Array {
    return this.flat.data.subarray(this.indexStarts.data[row]!, this.indexStarts.data[row + 1]!);
  }
}

/** A reader over a whole request, to be bounded to each element in turn. */
export function elementReader(bytes: Uint8Array): BinaryReader {
  const reader = new BinaryReader(bytes);
  if (!('len' in reader))
    throw new Error('@bufbuild/protobuf BinaryReader changed: no len (request-columns.ts)');
  return reader;
}
