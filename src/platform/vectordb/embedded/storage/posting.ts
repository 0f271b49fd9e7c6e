import { Bitset } from './bitset.js';

/**
 * The rows holding one value of one payload field. Rare values keep a Set (a few bytes a row);
 * common ones (variant membership flags hold nearly every point) switch to a bitset, so OR-ing them
 * into a filter result is a word loop instead of a walk over every row.
 */
export class Posting {
  private sparse: Set<number> | undefined = new Set();
  private dense: Bitset | undefined;
  size = 0;

  /** `rows` is the collection's row count, which decides when dense pays (1 row in 128). */
  add(row: number, rows: number): void {
    if (this.dense) {
      if (!this.dense.has(row)) {
        this.dense.add(row);
        this.size++;
      }
      return;
    }
    const sparse = this.sparse!;
    if (sparse.has(row)) return;
    sparse.add(row);
    this.size++;
    if (this.size > 256 && this.size * 128 > rows) {
      const dense = new Bitset(rows);
      for (const r of sparse) dense.add(r);
      this.dense = dense;
      this.sparse = undefined;
    }
  }

  delete(row: number, rows: number): void {
    if (this.dense) {
      if (!this.dense.has(row)) return;
      this.dense.delete(row);
      this.size--;
      if (this.size * 512 < rows) {
        const sparse = new Set<number>();
        this.dense.forEach((r) => {
          sparse.add(r);
        });
        this.sparse = sparse;
        this.dense = undefined;
      }
      return;
    }
    if (this.sparse!.delete(row)) this.size--;
  }

  orInto(target: Bitset): void {
    if (this.dense) target.or(this.dense);
    else for (const row of this.sparse!) target.add(row);
  }
}
