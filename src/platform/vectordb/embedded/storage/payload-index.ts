import { type CompiledFilter, matchTokens, valueToken } from '../../filters.js';
import type { Payload, PayloadValue } from '../../vector-db.js';
import { Bitset } from './bitset.js';
import { NumericIndex } from './numeric-index.js';
import { Posting } from './posting.js';

interface FieldIndex {
  /** Inverted index: value token → rows (IN, NOT_IN). */
  values: Map<string, Posting>;
  /** Rows where the field is present and not an empty list (EXISTS, NOT_EXISTS). */
  present: Posting;
  /** Numeric values (ranges); created on the field's first number. */
  numbers: NumericIndex | undefined;
}

function scalars(value: PayloadValue): (string | number | boolean)[] {
  return Array.isArray(value) ? value : [value];
}

/**
 * Payload indexes of one collection: every field is indexed as it appears, an inverted index per
 * field for IN / EXISTS and a sorted numeric index for ranges. Filters become bitsets of rows, which
 * the planner counts (to choose exact scan or graph search) and the graph search tests per node.
 */
export class PayloadIndex {
  private readonly fields = new Map<string, FieldIndex>();

  /** `rows()` is the collection's row capacity, which sizes dense postings. */
  constructor(private readonly rows: () => number) {}

  add(row: number, payload: Payload): void {
    // for…in rather than Object.entries: no array per field (this runs for every point written).
    for (const field in payload)
      if (Object.hasOwn(payload, field)) this.addValue(row, field, payload[field]!);
  }

  remove(row: number, payload: Payload): void {
    for (const field in payload)
      if (Object.hasOwn(payload, field)) this.removeValue(row, field, payload[field]!);
  }

  addValue(row: number, field: string, value: PayloadValue): void {
    const values = scalars(value);
    if (values.length === 0) return;
    let index = this.fields.get(field);
    if (!index) {
      index = { values: new Map(), present: new Posting(), numbers: undefined };
      this.fields.set(field, index);
    }
    const rows = this.rows();
    index.present.add(row, rows);
    for (const scalar of values) {
      const token = valueToken(scalar);
      let posting = index.values.get(token);
      if (!posting) {
        posting = new Posting();
        index.values.set(token, posting);
      }
      posting.add(row, rows);
      if (typeof scalar === 'number') {
        index.numbers ??= new NumericIndex();
        index.numbers.set(row, scalar);
      }
    }
  }

  removeValue(row: number, field: string, value: PayloadValue): void {
    const index = this.fields.get(field);
    if (!index) return;
    const rows = this.rows();
    index.present.delete(row, rows);
    for (const scalar of scalars(value)) {
      const token = valueToken(scalar);
      const posting = index.values.get(token);
      if (!posting) continue;
      posting.delete(row, rows);
      if (posting.size === 0) index.values.delete(token);
      if (typeof scalar === 'number') index.numbers?.delete(row);
    }
  }

  /** Rows of `live` that satisfy every filter. */
  match(filters: readonly CompiledFilter[], live: Bitset): Bitset {
    const result = live.copy();
    for (const filter of filters) {
      const rows = this.matchOne(filter, live);
      result.and(rows);
    }
    return result;
  }

  private matchOne(filter: CompiledFilter, live: Bitset): Bitset {
    const index = this.fields.get(filter.field);
    const positive = new Bitset(live.capacity);
    switch (filter.kind) {
      case 'match':
        for (const token of matchTokens(filter)) index?.values.get(token)?.orInto(positive);
        break;
      case 'exists':
        index?.present.orInto(positive);
        break;
      case 'range':
        index?.numbers?.rangeInto(
          positive,
          filter.low,
          filter.lowInclusive,
          filter.high,
          filter.highInclusive,
        );
        return positive;
    }
    return filter.negate ? live.copy().andNot(positive) : positive;
  }
}
