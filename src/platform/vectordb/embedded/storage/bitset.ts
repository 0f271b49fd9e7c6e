/**
 * A growable set of row numbers as 32-bit words: filter results, live and indexed rows. Word-wise
 * AND / OR keep combining filters cheap (100,000 rows are 3,125 words).
 */
export class Bitset {
  words: Uint32Array;

  constructor(capacity = 0) {
    this.words = new Uint32Array(Math.max(1, Math.ceil(capacity / 32)));
  }

  static of(words: Uint32Array): Bitset {
    const set = new Bitset(0);
    set.words = words;
    return set;
  }

  get capacity(): number {
    return this.words.length * 32;
  }

  /** Grows (never shrinks) to hold row numbers below `capacity`. */
  ensure(capacity: number): void {
    const needed = Math.ceil(capacity / 32);
    if (needed <= this.words.length) return;
    const grown = new Uint32Array(Math.max(needed, this.words.length * 2));
    grown.set(this.words);
    this.words = grown;
  }

  has(row: number): boolean {
    const word = row >>> 5;
    return word < this.words.length && (this.words[word]! & (1 << (row & 31))) !== 0;
  }

  add(row: number): void {
    this.ensure(row + 1);
    this.words[row >>> 5]! |= 1 << (row & 31);
  }

  delete(row: number): void {
    const word = row >>> 5;
    if (word < this.words.length) this.words[word]! &= ~(1 << (row & 31));
  }

  clear(): void {
    this.words.fill(0);
  }

  copy(capacity = this.capacity): Bitset {
    const copy = new Bitset(Math.max(capacity, this.capacity));
    copy.words.set(this.words);
    return copy;
  }

  /** this ∩= other */
  and(other: Bitset): this {
    const { words } = this;
    const theirs = other.words;
    const shared = Math.min(words.length, theirs.length);
    for (let i = 0; i < shared; i++) words[i]! &= theirs[i]!;
    words.fill(0, shared);
    return this;
  }

  /** this ∪= other */
  or(other: Bitset): this {
    this.ensure(other.capacity);
    const { words } = this;
    const theirs = other.words;
    for (let i = 0; i < theirs.length; i++) words[i]! |= theirs[i]!;
    return this;
  }

  /** this −= other */
  andNot(other: Bitset): this {
    const { words } = this;
    const theirs = other.words;
    const shared = Math.min(words.length, theirs.length);
    for (let i = 0; i < shared; i++) words[i]! &= ~theirs[i]!;
    return this;
  }

  count(): number {
    let total = 0;
    for (const word of this.words) {
      let v = word - ((word >>> 1) & 0x55555555);
      v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
      total += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
    }
    return total;
  }

  /** Calls `visit` with each row in ascending order. */
  forEach(visit: (row: number) => void): void {
    const { words } = this;
    for (let w = 0; w < words.length; w++) {
      let word = words[w]!;
      while (word !== 0) {
        const low = word & -word;
        visit((w << 5) + 31 - Math.clz32(low));
        word ^= low;
      }
    }
  }

  toArray(): Uint32Array {
    const rows = new Uint32Array(this.count());
    let at = 0;
    this.forEach((row) => {
      rows[at++] = row;
    });
    return rows;
  }
}
