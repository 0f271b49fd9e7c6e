import type { Bitset } from './bitset.js';

/**
 * Numeric values of one payload field, for range filters. The current value of every row sits in a
 * Float64Array (NaN: none); a sorted copy answers ranges by binary search. Writes do not re-sort:
 * changed rows wait in `pending` and are checked one by one, and entries of the sorted copy are
 * checked against the current value, until enough changes pile up to make a re-sort worth it.
 */
export class NumericIndex {
  private current = new Float64Array(64).fill(Number.NaN);
  private sortedRows = new Uint32Array(0);
  private sortedValues = new Float64Array(0);
  private pending = new Set<number>();
  size = 0;

  set(row: number, value: number): void {
    this.ensure(row + 1);
    if (Number.isNaN(this.current[row]!)) this.size++;
    this.current[row] = value;
    this.pending.add(row);
  }

  delete(row: number): void {
    if (row >= this.current.length || Number.isNaN(this.current[row]!)) return;
    this.current[row] = Number.NaN;
    this.size--;
    this.pending.add(row);
  }

  /** Adds the rows whose value lies in the range to `target`. */
  rangeInto(target: Bitset, low: number, lowInclusive: boolean, high: number, highInclusive: boolean): void {
    if (this.pending.size > 1024 + this.sortedRows.length / 16) this.resort();
    const inRange = (v: number) =>
      (lowInclusive ? v >= low : v > low) && (highInclusive ? v <= high : v < high);
    const values = this.sortedValues;
    // First entry not below `low` (entries equal to low are checked by inRange).
    let lo = 0;
    let hi = values.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (values[mid]! < low) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < values.length && values[i]! <= high; i++) {
      const row = this.sortedRows[i]!;
      // A stale entry's row either moved (checked below through pending) or lost its value.
      if (values[i] === this.current[row] && inRange(values[i]!)) target.add(row);
    }
    for (const row of this.pending) {
      const v = this.current[row]!;
      if (!Number.isNaN(v) && inRange(v)) target.add(row);
    }
  }

  private ensure(capacity: number): void {
    if (capacity <= this.current.length) return;
    const grown = new Float64Array(Math.max(capacity, this.current.length * 2)).fill(Number.NaN);
    grown.set(this.current);
    this.current = grown;
  }

  private resort(): void {
    const rows = new Uint32Array(this.size);
    let at = 0;
    for (let row = 0; row < this.current.length; row++)
      if (!Number.isNaN(this.current[row]!)) rows[at++] = row;
    const current = this.current;
    rows.sort((a, b) => current[a]! - current[b]!);
    this.sortedRows = rows;
    this.sortedValues = Float64Array.from(rows, (row) => current[row]!);
    this.pending.clear();
  }
}
