/**
 * What the readers of training files (Parquet, JSON Lines) hand the runner: rows in batches, each
 * numbered within its file, either read or with the reason it could not be.
 */

/** One row of a training file. */
export type SourceRow =
  | {
      /** 1-based: the row of a Parquet file, the line of a JSON Lines file. */
      row: number;
      /** Column → value, in the file's column order. */
      fields: Readonly<Record<string, unknown>>;
    }
  | { row: number; error: string };

export interface RowSource {
  /** Top-level columns, when the file declares them up front (Parquet); undefined for JSON Lines. */
  readonly columns: readonly string[] | undefined;
  /** Share of the file read so far, 0..1. */
  fraction(): number;
  /**
   * The rows after row `after` (0: from the start), in file order, a batch at a time. Fails with a
   * message naming the file (and rows) when the file cannot be read.
   */
  batches(after: number): AsyncGenerator<SourceRow[]>;
  /** Releases the file. */
  close(): void;
}
