import { stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { describeError, invalidArgument, isLatticeError, LatticeError } from '../platform/errors.js';
import { readCsvFile } from './csv-records.js';
import { entityTtlMs } from './entity-rows.js';
import { readLines } from './line-records.js';
import { csvRowDecoder, objectRowDecoder } from './loader-columns.js';
import { openParquet } from './parquet-records.js';
import { ProgressBar, type ProgressOptions } from './progress.js';
import type { EntityDefinition, FeatureRegistry } from './registry.js';
import type { FeatureStore, StoredRow } from './store.js';

export type LoadFormat = 'csv' | 'jsonl' | 'parquet';

export interface LoadOptions {
  registry: FeatureRegistry;
  store: FeatureStore;
  entity: string;
  files: readonly string[];
  /** Default: from each file's extension (.csv .tsv / .jsonl .ndjson .json / .parquet .pq). */
  format?: LoadFormat;
  /** CSV field delimiter (default `,`, tab for .tsv). */
  delimiter?: string;
  /** Rows per store write (default 500). */
  batchSize?: number;
  /** Store writes in flight at once (default 4). */
  concurrency?: number;
  /** The load aborts when more rows than this are bad (default 100; 0 = abort on the first). */
  maxBadRows?: number;
  /** TTL of the written rows; default the entity's `ttl_seconds`, else none. */
  ttlMs?: number;
  /** Progress on stderr (default), elsewhere, or `false` for none. */
  progress?: ProgressOptions | false;
  /** Told about each bad row as it is skipped. */
  onBadRow?: (bad: BadRow) => void;
}

/** A skipped input row: where it is and why. */
export interface BadRow {
  file: string;
  /** Line number (CSV, JSON Lines; a CSV record's first line) or row number (Parquet), 1-based. */
  line: number;
  unit: 'line' | 'row';
  reason: string;
}

export interface FileLoadReport {
  file: string;
  format: LoadFormat;
  rowsRead: number;
  rowsWritten: number;
  badRows: number;
}

export interface LoadReport {
  entity: string;
  files: FileLoadReport[];
  rowsRead: number;
  rowsWritten: number;
  badRows: number;
  /** The first 100 bad rows. */
  badRowSamples: BadRow[];
  elapsedMs: number;
}

/** The load stopped (too many bad rows, an unreadable file, a failed write); `report` says how far it got. */
export class LoadAbortedError extends LatticeError {
  constructor(
    message: string,
    readonly report: LoadReport,
    cause?: unknown,
  ) {
    super(
      isLatticeError(cause) ? cause.code : cause === undefined ? 'INVALID_ARGUMENT' : 'INTERNAL',
      message,
      {
        cause,
      },
    );
    this.name = 'LoadAbortedError';
  }
}

export function describeBadRow(bad: BadRow): string {
  return `${bad.file}${bad.unit === 'line' ? `:${bad.line}` : ` row ${bad.line}`}: ${bad.reason}`;
}

const MAX_SAMPLES = 100;

/**
 * Bulk-loads rows of one entity from CSV, JSON Lines or Parquet files into the store.
 *
 * Columns (CSV header, JSON properties, Parquet columns) name key parts and features (see
 * `ColumnResolver`); values are parsed to each feature's type (vectors as JSON arrays or comma
 * lists). A row writes the groups it has columns for; a written group's features without a value
 * (missing, null, an empty CSV cell) take their defaults. A bad row is reported with its file and
 * line (row) number, counted and skipped; past `maxBadRows` the load aborts with LoadAbortedError
 * (rows already written stay written). Writes go to the store in batches, several in flight.
 */
export async function loadFeatureFiles(options: LoadOptions): Promise<LoadReport> {
  const entity = options.registry.requireEntity(options.entity);
  const started = performance.now();
  const report: LoadReport = {
    entity: entity.name,
    files: [],
    rowsRead: 0,
    rowsWritten: 0,
    badRows: 0,
    badRowSamples: [],
    elapsedMs: 0,
  };
  const writer = new BatchWriter(options.store, entity.name, {
    ttlMs: options.ttlMs ?? entityTtlMs(entity),
    concurrency: options.concurrency ?? 4,
  });
  try {
    for (const file of options.files) {
      const format = options.format ?? formatOf(file);
      const fileReport: FileLoadReport = { file, format, rowsRead: 0, rowsWritten: 0, badRows: 0 };
      report.files.push(fileReport);
      const progress =
        options.progress === false ? undefined : new ProgressBar(basename(file), options.progress);
      try {
        await loadFile(file, format, entity, options, writer, report, fileReport, progress);
      } finally {
        // Also on an abort, so that a terminal's progress line is ended before the error is printed.
        progress?.finish(fileReport.rowsRead, fileReport.badRows);
      }
    }
    await writer.drain();
  } catch (err) {
    await writer.drain().catch(() => {});
    report.elapsedMs = performance.now() - started;
    if (err instanceof LoadAbortedError) throw err;
    throw new LoadAbortedError(`load of ${entity.name} aborted: ${describeError(err)}`, report, err);
  }
  report.elapsedMs = performance.now() - started;
  return report;
}

async function loadFile(
  file: string,
  format: LoadFormat,
  entity: EntityDefinition,
  options: LoadOptions,
  writer: BatchWriter,
  report: LoadReport,
  fileReport: FileLoadReport,
  progress: ProgressBar | undefined,
): Promise<void> {
  const batchSize = options.batchSize ?? 500;
  const maxBadRows = options.maxBadRows ?? 100;
  let fraction: number | undefined;
  let batch: StoredRow[] = [];

  const flush = async () => {
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    await writer.write(rows, () => {
      fileReport.rowsWritten += rows.length;
      report.rowsWritten += rows.length;
    });
  };
  /** Decodes one row into the batch; returns a promise only when the batch is flushed (no await per row). */
  const take = (line: number, decode: () => StoredRow): Promise<void> | undefined => {
    fileReport.rowsRead++;
    report.rowsRead++;
    try {
      batch.push(decode());
    } catch (err) {
      if (!isLatticeError(err)) throw err;
      const bad: BadRow = { file, line, unit: format === 'parquet' ? 'row' : 'line', reason: err.message };
      fileReport.badRows++;
      report.badRows++;
      if (report.badRowSamples.length < MAX_SAMPLES) report.badRowSamples.push(bad);
      options.onBadRow?.(bad);
      if (report.badRows > maxBadRows) {
        throw new LoadAbortedError(
          `load of ${entity.name} aborted at ${describeBadRow(bad)}: ${report.badRows} bad rows, more than the limit of ${maxBadRows}`,
          report,
        );
      }
    }
    return batch.length >= batchSize ? flush() : undefined;
  };

  if (format === 'parquet') {
    const source = await openParquet(file);
    const decode = objectRowDecoder(entity, source.columns);
    for await (const records of source.batches()) {
      for (const { line, record } of records) {
        const flushing = take(line, () => decode(record));
        if (flushing) await flushing;
      }
      fraction = source.rowCount > 0 ? fileReport.rowsRead / source.rowCount : 1;
      progress?.update(fileReport.rowsRead, fraction, fileReport.badRows);
    }
  } else {
    const size = (
      await stat(file).catch((err: unknown) => {
        throw invalidArgument(`${file} cannot be read: ${describeError(err)}`, file);
      })
    ).size;
    const onBytes = (bytes: number) => {
      fraction = size > 0 ? bytes / size : 1;
    };
    if (format === 'csv') {
      const delimiter = options.delimiter ?? (extname(file).toLowerCase() === '.tsv' ? '\t' : ',');
      let decode: ReturnType<typeof csvRowDecoder> | undefined;
      for await (const records of readCsvFile(file, { delimiter, onBytes })) {
        for (const record of records) {
          if (decode === undefined) {
            try {
              decode = csvRowDecoder(entity, record.fields);
            } catch (err) {
              throw isLatticeError(err)
                ? invalidArgument(`${file}:${record.line}: ${err.message}`, file)
                : err;
            }
            continue;
          }
          const flushing = take(record.line, () => decode!(record));
          if (flushing) await flushing;
        }
        progress?.update(fileReport.rowsRead, fraction, fileReport.badRows);
      }
      if (decode === undefined) throw invalidArgument(`${file}: no header row`, file);
    } else {
      const decode = objectRowDecoder(entity);
      for await (const lines of readLines(file, { onBytes })) {
        for (const { line, text } of lines) {
          const flushing = take(line, () => decode(parseJson(text)));
          if (flushing) await flushing;
        }
        progress?.update(fileReport.rowsRead, fraction, fileReport.badRows);
      }
    }
  }
  await flush();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`not valid JSON: ${describeError(err)}`);
  }
}

function formatOf(file: string): LoadFormat {
  const extension = extname(file).toLowerCase();
  if (extension === '.csv' || extension === '.tsv') return 'csv';
  if (extension === '.jsonl' || extension === '.ndjson' || extension === '.json') return 'jsonl';
  if (extension === '.parquet' || extension === '.pq') return 'parquet';
  throw invalidArgument(
    `${file}: cannot tell the format from "${extension || 'no extension'}"; use .csv, .tsv, .jsonl, .ndjson or .parquet, or give the format`,
    file,
  );
}

/** Sends batches to the store with at most `concurrency` writes in flight; the first failure fails every later call. */
class BatchWriter {
  readonly #inFlight = new Set<Promise<void>>();
  #failure: unknown;

  constructor(
    private readonly store: FeatureStore,
    private readonly entity: string,
    private readonly options: { ttlMs: number | undefined; concurrency: number },
  ) {}

  async write(rows: StoredRow[], onWritten: () => void): Promise<void> {
    while (this.#inFlight.size >= Math.max(1, this.options.concurrency)) await Promise.race(this.#inFlight);
    this.#throwIfFailed();
    const writing = this.store
      .write(this.entity, rows, { ttlMs: this.options.ttlMs })
      .then(onWritten, (err: unknown) => {
        this.#failure ??= err;
      });
    const tracked = writing.finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
  }

  async drain(): Promise<void> {
    await Promise.all(this.#inFlight);
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }
}
