import { describeError, LatticeError } from '../../platform/errors.js';
import { CHECK_EVERY, inChunks, nextTurn, sliceOver } from '../../platform/scheduling/index.js';
import type { FeatureFetcher, FeatureQuery, FeatureRows } from '../clients/index.js';
import type { FeatureComponentConfig } from '../config/index.js';
import type { DagComponent } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { ByteColumn, ColumnSpec, ComponentMatrix } from '../matrix/component-matrix.js';
import { MAX_BATCHES_IN_FLIGHT, runBatches } from './batches.js';
import type { FeatureCache } from './feature-cache.js';
import { keyTexts } from './key-columns.js';

/**
 * FeatureComponent: fetches one entity's features for every row. Keys come from `fs_keys` (each
 * entry reads a column; several schema names split its value on `|`), are de-duplicated, and sent in
 * batches of `batch_size`, concurrently (at most MAX_BATCHES_IN_FLIGHT at once), each bounded by
 * `deadline_ms` from when it is sent and by the request deadline. Long loops (keys, result writing)
 * run in chunks that give the event loop its turn and stop once the request is cancelled or late.
 * Values land in the typed columns `<prefix><entity>:<group>:<feature>`. A row whose entity is
 * missing, or whose batch failed, keeps the defaults and is marked with this component's name; the
 * component fails only when every batch failed (which fails the request if it is required).
 */
export class FeatureComponent implements DagComponent<ExecutionContext> {
  readonly name: string;
  readonly required: boolean;
  private readonly query: Omit<FeatureQuery, 'keys'>;
  /** Values in a found row: one per feature of every group, in query order. */
  private readonly featureCount: number;

  constructor(
    private readonly config: FeatureComponentConfig,
    private readonly columns: readonly ColumnSpec[],
    private readonly fetcher: FeatureFetcher,
    /** Present when the component's cache is enabled. */
    private readonly cache?: FeatureCache,
  ) {
    this.name = config.name;
    this.required = config.required;
    this.query = {
      entity: config.entity,
      keysSchema: config.fs_keys.flatMap((k) => k.schema),
      featureGroups: config.feature_groups.map((g) => ({ label: g.label, features: g.features })),
    };
    this.featureCount = config.feature_groups.reduce((n, g) => n + g.features.length, 0);
  }

  async run(context: ExecutionContext, signal: AbortSignal): Promise<void> {
    const { matrix } = context;
    const rows = matrix.rowCount;
    const deadline = context.deadline;
    const { keys, rowKey } = await this.collectKeys(context, signal);
    const columns = this.columns.map((c) => matrix.byteColumn(c.name));
    // Cached entities first; only the misses go to the feature store.
    const fetched: (readonly Uint8Array[] | undefined)[] = this.cache
      ? await this.cache.lookup(keys, Math.min(deadline, Date.now() + this.config.deadline_ms), signal)
      : new Array(keys.length);
    const missing: number[] = [];
    for (let k = 0; k < keys.length; k++) if (fetched[k] === undefined) missing.push(k);
    const failed = new Uint8Array(keys.length);
    const batchSize = this.config.batch_size;
    let lastError: unknown;
    const timeoutMs = this.config.deadline_ms;
    await runBatches(
      Math.ceil(missing.length / batchSize),
      MAX_BATCHES_IN_FLIGHT,
      signal,
      deadline,
      (b: number) => {
        const batch = missing.slice(b * batchSize, (b + 1) * batchSize);
        return this.fetcher
          .retrieve({ ...this.query, keys: batch.map((k) => keys[k]!) }, { signal, deadline, timeoutMs })
          .then((result: FeatureRows) => this.checkShape(result, batch.length))
          .then(
            (result: FeatureRows) => {
              batch.forEach((k, i) => {
                fetched[k] = result[i];
              });
            },
            (err: unknown) => {
              lastError = err;
              for (const k of batch) failed[k] = 1;
            },
          );
      },
    );
    // Every entity had to come from the feature store and none did: the component failed as a whole.
    if (keys.length > 0 && missing.length === keys.length && missing.every((k) => failed[k] === 1))
      throw lastError;
    if (this.cache && !signal.aborted) {
      const fresh = missing.filter((k) => failed[k] === 0 && (fetched[k]?.length ?? 0) > 0);
      this.cache.store(
        fresh.map((k) => ({ key: keys[k]!, values: fetched[k]! })),
        signal,
      );
    }

    const failure =
      lastError === undefined ? '' : `${this.name}: feature store call failed: ${describeError(lastError)}`;
    // First decide each row's values (or mark why it has none), then write column by column.
    const rowValues: (readonly Uint8Array[] | undefined)[] = new Array(rows);
    const notFound: (string | undefined)[] = [];
    await inChunks(rows, signal, deadline, (from, to) => {
      for (let row = from; row < to; row++) {
        const key = rowKey[row]!;
        if (key < 0) {
          matrix.addRowError(row, `${this.name}: no key (empty or incomplete key column)`);
        } else if (failed[key] === 1) {
          matrix.addRowError(row, failure);
        } else {
          const values = fetched[key];
          if (values === undefined || values.length === 0) {
            notFound[key] ??= `${this.name}: entity ${keys[key]!.join('|')} not found`;
            matrix.addRowError(row, notFound[key]);
          } else {
            rowValues[row] = values;
          }
        }
      }
    });
    for (let c = 0; c < columns.length; c++) {
      const column = columns[c]!;
      await inChunks(rows, signal, deadline, (from, to) =>
        this.writeColumn(matrix, column, c, rowValues, from, to),
      );
    }
  }

  /**
   * One row per key sent and, in each found row, one value per feature: anything else fails the whole
   * batch, since values are matched to keys and features by position and would land shifted. (The
   * gRPC client checks the same and names the endpoint; this covers every other fetcher.)
   */
  private checkShape(result: FeatureRows, keys: number): FeatureRows {
    const where = `entity ${this.config.entity}`;
    if (result.length !== keys) {
      throw new LatticeError('INTERNAL', `${where}: ${result.length} rows returned for ${keys} keys`);
    }
    const features = this.featureCount;
    for (let i = 0; i < result.length; i++) {
      const values = result[i]?.length ?? 0;
      if (values !== 0 && values !== features) {
        throw new LatticeError(
          'INTERNAL',
          `${where}: row ${i} has ${values} values for ${features} requested features`,
        );
      }
    }
    return result;
  }

  /** Writes feature `c` of the rows `from…to−1` that have values; the hot loop of the component. */
  private writeColumn(
    matrix: ComponentMatrix,
    column: ByteColumn,
    c: number,
    rowValues: readonly (readonly Uint8Array[] | undefined)[],
    from: number,
    to: number,
  ): void {
    const width = column.width;
    const { data, filled } = column;
    for (let row = from; row < to; row++) {
      const values = rowValues[row];
      if (values === undefined) continue;
      const value = values[c];
      if (value === undefined || (width !== undefined && value.length !== width)) {
        matrix.addRowError(
          row,
          `${this.name}: ${column.name} has ${value?.length ?? 0} bytes, expected ${width}`,
        );
        continue;
      }
      if (width === undefined) {
        column.set(row, value);
        continue;
      }
      copyCell(data, row * width, value, width);
      filled[row] = 1;
    }
  }

  /** The unique key tuples of the request and, per row, the index of its key (-1: no key). */
  private async collectKeys(
    context: ExecutionContext,
    signal: AbortSignal,
  ): Promise<{ keys: string[][]; rowKey: Int32Array }> {
    const { matrix, deadline } = context;
    const rows = matrix.rowCount;
    const sources: { texts: readonly string[]; parts: number }[] = [];
    for (const k of this.config.fs_keys) {
      if (rows > CHECK_EVERY && sliceOver()) await nextTurn(signal, deadline);
      sources.push({ texts: keyTexts(matrix, k.col), parts: k.schema.length });
    }
    const rowKey = new Int32Array(rows);
    const index = new Map<string, number>();
    const keys: string[][] = [];
    if (sources.length === 1 && sources[0]!.parts === 1) {
      // The common case, one single-part key: the column text is the key, no tuple to build.
      const texts = sources[0]!.texts;
      await inChunks(rows, signal, deadline, (from, to) => {
        for (let row = from; row < to; row++) {
          const text = texts[row]!;
          let k = text === '' ? -1 : index.get(text);
          if (k === undefined) {
            k = keys.length;
            index.set(text, k);
            keys.push([text]);
          }
          rowKey[row] = k;
        }
      });
      return { keys, rowKey };
    }
    if (sources.every((source) => source.parts === 1)) {
      // Several single-part keys (user × category): a tuple is built only for a key not seen yet.
      await inChunks(rows, signal, deadline, (from, to) => {
        for (let row = from; row < to; row++) {
          let id = sources[0]!.texts[row]!;
          let empty = id === '';
          for (let s = 1; s < sources.length && !empty; s++) {
            const text = sources[s]!.texts[row]!;
            empty = text === '';
            id = `${id}\u0000${text}`;
          }
          if (empty) {
            rowKey[row] = -1;
            continue;
          }
          let k = index.get(id);
          if (k === undefined) {
            k = keys.length;
            index.set(id, k);
            keys.push(sources.map((source) => source.texts[row]!));
          }
          rowKey[row] = k;
        }
      });
      return { keys, rowKey };
    }
    await inChunks(rows, signal, deadline, (from, to) => {
      for (let row = from; row < to; row++) {
        const tuple: string[] = [];
        let empty = false;
        for (const source of sources) {
          const text = source.texts[row]!;
          if (text === '') empty = true;
          if (source.parts === 1) tuple.push(text);
          else {
            const parts = text.split('|');
            if (parts.length !== source.parts) empty = true; // a composite key must have every part
            tuple.push(...parts);
          }
        }
        if (empty) {
          rowKey[row] = -1;
          continue;
        }
        const id = tuple.join('\u0000');
        let k = index.get(id);
        if (k === undefined) {
          k = keys.length;
          index.set(id, k);
          keys.push(tuple);
        }
        rowKey[row] = k;
      }
    });
    return { keys, rowKey };
  }
}

/** Copies one fixed-width value; unrolled for the common widths, where it is ~2× faster than a loop. */
function copyCell(data: Uint8Array, at: number, value: Uint8Array, width: number): void {
  switch (width) {
    case 4:
      data[at] = value[0]!;
      data[at + 1] = value[1]!;
      data[at + 2] = value[2]!;
      data[at + 3] = value[3]!;
      return;
    case 8:
      data[at] = value[0]!;
      data[at + 1] = value[1]!;
      data[at + 2] = value[2]!;
      data[at + 3] = value[3]!;
      data[at + 4] = value[4]!;
      data[at + 5] = value[5]!;
      data[at + 6] = value[6]!;
      data[at + 7] = value[7]!;
      return;
    case 1:
      data[at] = value[0]!;
      return;
    case 2:
      data[at] = value[0]!;
      data[at + 1] = value[1]!;
      return;
    default:
      if (width > 16) data.set(value, at);
      else for (let i = 0; i < width; i++) data[at + i] = value[i]!;
  }
}
