/**
 * The planner's counts of a filter's candidates (query-plan.ts), remembered per collection table and
 * filter (its SQL conditions and their values) for a short while, so that a stream of searches under
 * the same broad filter (a variant's membership flag, matching most rows) does not count up to the
 * cap before every one of them.
 *
 * A count stays good until this process writes to the table (upsert, delete, setPayload forget the
 * table's counts) or it is older than the planner's `candidateCountMaxAgeMs` (another process's
 * writes). A count that started before a write is not remembered after it: each table has a
 * generation, raised by every write, and a count records only under the generation it started in.
 *
 * A stale count costs only the choice of path, never hits: an HNSW pass that comes back short is
 * answered by an exact scan, and an exact scan finds every match.
 */

/** What one capped count found: exactly `matches` candidates, or (when `capped`) more than `cap`. */
interface Counted {
  matches: number;
  cap: number;
  capped: boolean;
  at: number;
}

/** Filters remembered per table; beyond this many, the oldest are forgotten first. */
const MAX_FILTERS_PER_TABLE = 256;

export class CandidateCounts {
  readonly #maxAgeMs: number;
  readonly #tables = new Map<string, Map<string, Counted>>();
  readonly #generations = new Map<string, number>();

  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  /**
   * Whether the filter keyed `key` has at most `cap` candidates, from a remembered count; undefined
   * when none answers it (never counted, too old, or counted with a smaller cap that it exceeded).
   */
  atMost(table: string, key: string, cap: number, now: number): boolean | undefined {
    const counted = this.#tables.get(table)?.get(key);
    if (counted === undefined || now - counted.at > this.#maxAgeMs) return undefined;
    if (!counted.capped) return counted.matches <= cap;
    // More than counted.cap: more than any cap up to it, unknown above.
    return cap <= counted.cap ? false : undefined;
  }

  /** The table's current generation, to hand back to {@link record} with a count started now. */
  generation(table: string): number {
    return this.#generations.get(table) ?? 0;
  }

  /** Remembers a count of up to `cap + 1` rows that found `found`, unless the table was written since. */
  record(table: string, key: string, cap: number, found: number, generation: number, now: number): void {
    if (this.generation(table) !== generation) return;
    let counts = this.#tables.get(table);
    if (counts === undefined) {
      counts = new Map();
      this.#tables.set(table, counts);
    }
    counts.delete(key);
    if (counts.size >= MAX_FILTERS_PER_TABLE) counts.delete(counts.keys().next().value!);
    counts.set(key, { matches: Math.min(found, cap), cap, capped: found > cap, at: now });
  }

  /** The table was written (or dropped): its counts are forgotten, and counts under way too. */
  forget(table: string): void {
    this.#tables.delete(table);
    this.#generations.set(table, this.generation(table) + 1);
  }
}
