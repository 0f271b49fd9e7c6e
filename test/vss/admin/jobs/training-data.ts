/**
 * Training data for the job runner tests, generated from seeds: Parquet files written with
 * apache-arrow + parquet-wasm (the libraries the runner reads with, as the inference log does) and
 * JSON Lines files; a queue that records (and can fail or hold) publishes; and reading back what a
 * topic holds.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  Bool,
  type DataType,
  Field,
  Float32,
  Float64,
  Int64,
  List,
  Table,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { Compression, Table as WasmTable, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import { LatticeError } from '../../../../src/platform/errors.js';
import type {
  PublishOptions,
  PublishResult,
  Queue,
  QueueMessage,
} from '../../../../src/platform/queue/index.js';
import type { IngestionJob } from '../../../../src/vss/admin/jobs/index.js';
import { vectorOf } from '../../consumers/ingestion-world.js';

export { vectorOf };

export function tempDir(prefix = 'lattice-jobs-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A training row as the tests generate it. */
export type TrainingRow = {
  id: string;
  emb: number[] | null;
  flag?: boolean | null;
  brand?: string | null;
  is_live?: string | null;
  price?: number | null;
};

/** `count` rows with ids `<prefix><n>`, vectors from the seed n, and attributes cycling through a few values. */
export function trainingRows(
  count: number,
  options: { from?: number; prefix?: string; dimension?: number } = {},
): TrainingRow[] {
  const from = options.from ?? 0;
  const rows: TrainingRow[] = [];
  for (let n = from; n < from + count; n++) {
    rows.push({
      id: `${options.prefix ?? 'c'}${n}`,
      emb: vectorOf(n + 1, options.dimension),
      flag: n % 5 !== 0,
      brand: ['a', 'b', 'c'][n % 3]!,
      is_live: n % 2 === 0 ? 'true' : 'false',
      price: n + 0.5,
    });
  }
  return rows;
}

const COLUMN_TYPES: Record<string, () => DataType> = {
  id: () => new Utf8(),
  emb: () => new List(new Field('item', new Float32(), true)),
  search: () => new List(new Field('item', new Float32(), true)),
  flag: () => new Bool(),
  brand: () => new Utf8(),
  is_live: () => new Utf8(),
  price: () => new Float64(),
  stock: () => new Int64(),
};

/** Writes rows as a Parquet file (snappy pages, `rowGroupSize` rows per group); columns in the order given. */
export function writeParquetFile(
  path: string,
  rows: readonly Record<string, unknown>[],
  options: { columns?: readonly string[]; rowGroupSize?: number; types?: Record<string, DataType> } = {},
): void {
  const columns = options.columns ?? Object.keys(rows[0] ?? {});
  const table = new Table(
    Object.fromEntries(
      columns.map((column) => {
        const type = options.types?.[column] ?? COLUMN_TYPES[column]?.() ?? new Utf8();
        return [
          column,
          vectorFromArray(
            rows.map((row) => row[column] ?? null),
            type,
          ),
        ];
      }),
    ),
  );
  let properties = new WriterPropertiesBuilder().setCompression(Compression.SNAPPY);
  if (options.rowGroupSize !== undefined) properties = properties.setMaxRowGroupSize(options.rowGroupSize);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, writeParquet(WasmTable.fromIPCStream(tableToIPC(table, 'stream')), properties.build()));
}

/** Writes lines (objects as JSON, strings as they are) as a JSON Lines file. */
export function writeJsonLinesFile(path: string, lines: readonly (Record<string, unknown> | string)[]): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(
    path,
    lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n') + '\n',
  );
}

/** A job over `path` for the ingestion world's model (`m`, dimension 4) and its three embedded variants. */
export function jobFor(path: string, overrides: Partial<IngestionJob> = {}): IngestionJob {
  return {
    jobId: 'job-1',
    kind: 'RESET',
    entity: 'catalog',
    modelName: 'm',
    version: 1,
    trainingDataPath: path,
    columns: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    vectorDimension: 4,
    variantVersions: { organic: 1, live: 1, brand_a: 1 },
    indexDefaults: {},
    topic: 'vss-embeddings',
    partitions: 3,
    ...overrides,
  };
}

/** A decoded message of the ingestion topic. */
export interface Published {
  partition: number;
  key: string | undefined;
  messageId: string | undefined;
  body: Record<string, unknown>;
}

/** Everything `topic` holds, in partition order then sequence order, read through a group of its own. */
export async function readTopic(queue: Queue, topic: string, expected: number): Promise<Published[]> {
  const seen: (Published & { sequence: number })[] = [];
  const group = `reader_${Math.random().toString(36).slice(2)}`;
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  const consumer = await queue.subscribe(topic, group, (message: QueueMessage) => {
    seen.push({
      partition: message.partition,
      sequence: message.sequence,
      key: message.key,
      messageId: message.messageId,
      body: JSON.parse(Buffer.from(message.payload).toString('utf8')) as Record<string, unknown>,
    });
    if (seen.length >= expected) resolve();
  });
  // Resolved as soon as `expected` messages are in; the deadline only ends a wait for ones never sent.
  const timer = setTimeout(resolve, 30_000);
  await promise;
  clearTimeout(timer);
  await consumer.close();
  return seen
    .sort((a, b) => a.partition - b.partition || a.sequence - b.sequence)
    .map(({ sequence: _sequence, ...rest }) => rest);
}

/**
 * A queue that passes everything to `inner` but counts publishes, can refuse them after a number
 * (`failAfter`, with a non-transient error), hold them until released (`hold`), and tell `onPublish`.
 */
export class RecordingQueue implements Queue {
  readonly kind = 'memory' as const;
  publishes = 0;
  failAfter = Number.POSITIVE_INFINITY;
  onPublish: ((payload: Uint8Array, options: PublishOptions | undefined) => void | Promise<void>) | undefined;
  /** Changes the options of every publish (e.g. drops message ids, as if the de-duplication window had passed). */
  rewrite: ((options: PublishOptions | undefined) => PublishOptions | undefined) | undefined;
  #held: (() => void)[] | undefined;

  constructor(readonly inner: Queue) {}

  /** Holds every publish from now until `release`. */
  hold(): void {
    this.#held ??= [];
  }

  get heldCount(): number {
    return this.#held?.length ?? 0;
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const resume of held) resume();
  }

  async publish(topic: string, payload: Uint8Array, options?: PublishOptions): Promise<PublishResult> {
    this.publishes++;
    await this.onPublish?.(payload, options);
    if (this.publishes > this.failAfter) {
      throw new LatticeError('INTERNAL', 'the queue broke (test)');
    }
    if (this.#held !== undefined) await new Promise<void>((resolve) => this.#held!.push(resolve));
    return this.inner.publish(topic, payload, this.rewrite ? this.rewrite(options) : options);
  }

  ensureTopic: Queue['ensureTopic'] = (...args) => this.inner.ensureTopic(...args);
  describeTopic: Queue['describeTopic'] = (...args) => this.inner.describeTopic(...args);
  topicStats: Queue['topicStats'] = (...args) => this.inner.topicStats(...args);
  groupLag: Queue['groupLag'] = (...args) => this.inner.groupLag(...args);
  deleteTopic: Queue['deleteTopic'] = (...args) => this.inner.deleteTopic(...args);
  subscribe: Queue['subscribe'] = (...args) => this.inner.subscribe(...args);
  close: Queue['close'] = () => this.inner.close();
}

/** `JSON.parse` of a JSON-string field of an event. */
export function jsonOf(value: unknown): unknown {
  return JSON.parse(value as string);
}

export { join };
