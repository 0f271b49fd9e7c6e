/**
 * The floors of bench/vss-ingest, measured on a fresh stack of the same kind as the product run, so
 * the result can say where the time goes. Each writes the same 100,000 rows or points as the product
 * and has the work split into one lane per partition, batches of the consumer's batch size, lanes in
 * parallel (as the runner applies partitions):
 *
 * - `sql`: the embedding rows alone, one hand-written upsert per batch into a copy of the embeddings
 *   table (`LIKE … INCLUDING ALL`, so the column types are whatever the store uses now), with no
 *   validation, no ledger and nothing read back;
 * - `vectordb`: the points alone (same vectors and payloads) upserted into the stack's embedded
 *   vector DB, write-ahead log on: acknowledged rate, and seconds until indexed;
 * - `processor`: `IngestionHandler.apply` on already-parsed events (store rows, ledger, points) with
 *   no queue and no runner; `parse` timed apart over the same events;
 * - `runner`: the queue and the consumer runner with a processor that does nothing, over a topic of
 *   the same messages: what the queue and the runner leave for the processors;
 * - `pipeline`: the durable work of an acknowledgement with the raw libraries only (parse, row
 *   upsert, point log, ack record; see pipelineFloor): the machine's floor for the ingestion goals.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Metrics } from '../../src/platform/metrics/index.js';
import type { SqlValue } from '../../src/platform/sql/index.js';
import { ConsumerRunner } from '../../src/vss/consumers/consumer-runner.js';
import type { EventOutcome } from '../../src/vss/consumers/event-batch.js';
import type { IngestionMessage } from '../../src/vss/consumers/ingestion-message.js';
import { retrySettings, vssTopicOptions } from '../../src/vss/consumers/vss-topics.js';
import { collectionName } from '../../src/vss/model/index.js';
import { vectorBytes, vectorTransport } from '../../src/vss/store/vector-bytes.js';
import { ingestionHandler, type Stack } from './stack.js';
import { untilSettled } from './until-settled.js';
import {
  candidateId,
  eventBytes,
  MODEL,
  pointPayload,
  registerModel,
  tablesOf,
  VARIANTS,
  VERSION,
  vectorOf,
  type Workload,
} from './workload.js';

const POLL_MS = 10;
const rate = (n: number, seconds: number) => Math.round(n / seconds);
const since = (t: number) => (performance.now() - t) / 1000;

/** Runs `lanes` workers, lane l taking the events i with i % lanes === l in batches of `batch`. */
async function inLanes(
  events: number,
  lanes: number,
  batch: number,
  work: (indices: number[]) => Promise<unknown>,
): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      let indices: number[] = [];
      for (let i = lane; i < events; i += lanes) {
        indices.push(i);
        if (indices.length === batch) {
          await work(indices);
          indices = [];
        }
      }
      if (indices.length > 0) await work(indices);
    }),
  );
  return since(started);
}

export interface SqlFloor {
  /** The store's vector column type, as information_schema names it (`bytea`, or `_float4` for real[]). */
  embedding_type: string;
  per_s: number;
}

/**
 * Raw upserts of the embedding rows into a copy of the registered embeddings table, one statement
 * per batch: for bytea, an INSERT … SELECT over unnest(ids, flags) cutting each row's vector out of
 * one parameter sent the way the store sends it (vector-bytes.ts: binary to PostgreSQL, base64 text
 * to PGlite); for real[] (the layout before), a multi-row VALUES with an array per row.
 */
export async function sqlFloor(stack: Stack, load: Workload, batch: number): Promise<SqlFloor> {
  const rows = await rawRowWriter(stack, load, 'floor_rows');
  const vectors = (i: number) => load.vectors[i]!;
  const seconds = await inLanes(load.vectors.length, load.partitions, batch, (indices) =>
    rows.write(indices, vectors),
  );
  await rows.drop();
  return { embedding_type: rows.type, per_s: rate(load.vectors.length, seconds) };
}

interface RawRowWriter {
  /** The store's vector column type, as information_schema names it. */
  type: string;
  /** One hand-written upsert of events `indices`, their vectors from `vectorAt`. */
  write(indices: readonly number[], vectorAt: (i: number) => Float32Array): Promise<unknown>;
  drop(): Promise<void>;
}

/** A copy of the registered embeddings table and the raw upsert of the sql floor into it. */
async function rawRowWriter(stack: Stack, load: Workload, table: string): Promise<RawRowWriter> {
  const source = tablesOf(load.entity).embeddings;
  const { rows } = await stack.sql.query<{ data_type: string; udt_name: string }>(
    `SELECT data_type, udt_name FROM information_schema.columns
      WHERE table_name = $1 AND column_name = 'embedding' AND table_schema = ANY (current_schemas(false))`,
    [source],
  );
  const type = rows[0]?.data_type === 'ARRAY' ? rows[0].udt_name : (rows[0]?.data_type ?? 'unknown');
  if (type !== 'bytea' && type !== '_float4') {
    throw new Error(`sql floor: the embeddings table stores vectors as ${type}; teach floors.ts to write it`);
  }
  await stack.sql.query(`CREATE TABLE ${table} (LIKE ${source} INCLUDING ALL)`);
  const flags = VARIANTS.map((v) => `to_be_indexed_${v}`);
  const updates = ['embedding', 'search_embedding', 'expires_at', ...flags].map(
    (c) => `${c} = EXCLUDED.${c}`,
  );
  const transport = vectorTransport(stack.sql.kind);
  const write = (indices: readonly number[], vectorAt: (i: number) => Float32Array) => {
    if (type === 'bytea') {
      const width = load.dimension * 4;
      const vectors = Buffer.allocUnsafe(indices.length * width);
      indices.forEach((i, k) => {
        vectors.set(vectorBytes(vectorAt(i)), k * width);
      });
      return stack.sql.query(
        `WITH v AS MATERIALIZED (SELECT ${transport.expression('$3')} AS bytes)
         INSERT INTO ${table} (model_name, version, id, embedding, ${flags.join(', ')})
         SELECT $1, $2, u.id, substr(v.bytes, (u.n::integer - 1) * ${width} + 1, ${width}), u.organic, u.live
           FROM v, unnest($4::text[], $5::boolean[], $6::boolean[]) WITH ORDINALITY AS u(id, organic, live, n)
         ON CONFLICT (model_name, version, id) DO UPDATE SET ${updates.join(', ')}`,
        [
          MODEL,
          VERSION,
          transport.value(vectors),
          indices.map((i) => load.ids[i]!),
          indices.map(() => true),
          indices.map((i) => i % 3 !== 2),
        ],
      );
    }
    const params: SqlValue[] = [MODEL, VERSION];
    const values: string[] = [];
    for (const i of indices) {
      const p = params.length;
      params.push(load.ids[i]!, vectorAt(i), true, i % 3 !== 2);
      values.push(`($1, $2, $${p + 1}, $${p + 2}, NULL, NULL, $${p + 3}, $${p + 4})`);
    }
    return stack.sql.query(
      `INSERT INTO ${table} (model_name, version, id, embedding, search_embedding, expires_at, ${flags.join(', ')})
       VALUES ${values.join(',')}
       ON CONFLICT (model_name, version, id) DO UPDATE SET ${updates.join(', ')}`,
      params,
    );
  };
  return {
    type,
    write,
    drop: async () => {
      await stack.sql.query(`DROP TABLE ${table}`);
    },
  };
}

/**
 * The least an acknowledged event costs with the same libraries and no product code: per batch of a
 * lane, each event's bytes decoded and parsed (`JSON.parse`, and the three maps it carries as JSON
 * text), its vector made a Float32Array; then, at the same time, the raw upsert of the rows (the sql
 * floor's statement, on the stack's database: PGlite with its flush, or PostgreSQL) and the points
 * (ids, vectors, payload text) appended to a log file and fdatasynced; then an acknowledgement record
 * appended to a journal file and fdatasynced. No validation, ledger, point store or index, and no
 * queue: the events come from memory and the acknowledgement is a local record on either stack (on
 * JetStream too), so the queue's own cost is the runner floor's. If this is below a goal on a host,
 * no implementation on these libraries reaches the goal there; above it, the difference is ours.
 */
export async function pipelineFloor(
  stack: Stack,
  load: Workload,
  batch: number,
  entity: string,
): Promise<number> {
  const bytes = load.vectors.map((_, i) => eventBytes(entity, i, vectorOf(i, load.dimension).text));
  const rows = await rawRowWriter(stack, load, 'floor_pipeline_rows');
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-pipeline-'));
  const log = await open(join(dir, 'points.log'), 'a');
  const journal = await open(join(dir, 'acks.log'), 'a');
  const utf8 = new TextDecoder();
  try {
    const seconds = await inLanes(bytes.length, load.partitions, batch, async (indices) => {
      const vectors = new Map<number, Float32Array>();
      const records: Buffer[] = [];
      for (const i of indices) {
        const event = JSON.parse(utf8.decode(bytes[i]!));
        const space = event.index_space;
        JSON.parse(space.variants_version_map);
        JSON.parse(space.variants_index_map);
        const payload: string = space.payload;
        JSON.parse(payload);
        const vector = Float32Array.from(space.embedding as number[]);
        vectors.set(i, vector);
        records.push(Buffer.from(`${event.candidate_id}\t${payload}\n`), Buffer.from(vector.buffer));
      }
      await Promise.all([
        rows.write(indices, (i) => vectors.get(i)!),
        log.write(Buffer.concat(records)).then(() => log.datasync()),
      ]);
      await journal.write(`${indices[0]} ${indices.length}\n`);
      await journal.datasync();
    });
    return rate(bytes.length, seconds);
  } finally {
    await log.close();
    await journal.close();
    rmSync(dir, { recursive: true, force: true });
    await rows.drop();
  }
}

export interface VectorDbFloor {
  per_s: number;
  ack_s: number;
  indexed_after_s: number;
}

/** The same points upserted straight into the stack's embedded vector DB (write-ahead log on). */
export async function vectorDbFloor(stack: Stack, load: Workload, batch: number): Promise<VectorDbFloor> {
  const collection = 'floor_points';
  await stack.vectorDb.createCollection({ name: collection, dimension: load.dimension, distance: 'COSINE' });
  const started = performance.now();
  const ackSeconds = await inLanes(load.vectors.length, load.partitions, batch, (indices) =>
    stack.vectorDb.upsert(
      collection,
      indices.map((i) => ({ id: load.ids[i]!, vector: load.vectors[i]!, payload: pointPayload(i) })),
    ),
  );
  while ((await stack.vectorDb.collectionInfo(collection)).indexedPoints < load.vectors.length) {
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const indexedSeconds = since(started);
  await stack.vectorDb.dropCollection(collection);
  return {
    per_s: rate(load.vectors.length, ackSeconds),
    ack_s: Number(ackSeconds.toFixed(3)),
    indexed_after_s: Number(indexedSeconds.toFixed(3)),
  };
}

export interface ProcessorFloor {
  parse_per_s: number;
  per_s: number;
}

/** The ingestion handler applied directly, no queue, no runner (a model registered for it alone). */
export async function processorFloor(
  stack: Stack,
  load: Workload,
  batch: number,
  storeId: number,
): Promise<ProcessorFloor> {
  const entity = `${load.entity}_proc`;
  await registerModel(stack.store, entity, load.dimension, storeId);
  const handler = ingestionHandler(stack);
  const bytes = load.vectors.map((_, i) => eventBytes(entity, i, vectorOf(i, load.dimension).text));
  const parseStarted = performance.now();
  const messages = bytes.map((b) => handler.parse(b));
  const parsePerS = rate(messages.length, since(parseStarted));
  bytes.length = 0;
  const seconds = await inLanes(messages.length, load.partitions, batch, async (indices) => {
    const outcomes = await handler.apply(indices.map((i) => messages[i]!));
    const refused = outcomes.find((o) => o !== undefined);
    if (refused !== undefined) throw new Error(`processor floor: an event was refused: ${refused}`);
  });
  // Its indexing is not waited for (the vectordb floor times that): the collection goes at once.
  await stack.vectorDb.dropCollection(collectionName(entity, MODEL, VERSION));
  return { parse_per_s: parsePerS, per_s: rate(messages.length, seconds) };
}

/** The queue and the consumer runner with a processor that does nothing, over the same messages. */
export async function runnerFloor(stack: Stack, load: Workload): Promise<number> {
  const consumers = stack.settings.vss.consumers;
  const topic = `${stack.topic}-noop`;
  await stack.queue.ensureTopic(topic, vssTopicOptions(consumers));
  try {
    let next = 0;
    const events = load.vectors.length;
    await Promise.all(
      Array.from({ length: 512 }, async () => {
        for (let i = next++; i < events; i = next++) {
          const bytes = eventBytes(load.entity, i, vectorOf(i, load.dimension).text);
          await stack.queue.publish(topic, bytes, { key: candidateId(i) });
        }
      }),
    );
    let handled = 0;
    const started = performance.now();
    const runner = await ConsumerRunner.start<IngestionMessage>({
      queue: stack.queue,
      topic,
      group: consumers.group,
      handler: {
        kind: 'noop',
        parse: () => undefined as never,
        apply: async (messages): Promise<EventOutcome[]> => {
          handled += messages.length;
          return new Array(messages.length).fill(undefined);
        },
      },
      batchSize: consumers.batchSize,
      lingerMs: consumers.lingerMs,
      retry: retrySettings(consumers),
      metrics: new Metrics(),
    });
    await untilSettled({
      handled: () => handled,
      expected: events,
      lag: async () =>
        (await stack.queue.groupLag(topic, consumers.group)).reduce((n, p) => n + p.pending + p.unsettled, 0),
      pollMs: POLL_MS,
    });
    const seconds = since(started);
    await runner.close();
    return rate(events, seconds);
  } finally {
    await stack.queue.deleteTopic(topic).catch(() => false);
    await stack.queue.deleteTopic(`${topic}-dlq`).catch(() => false);
  }
}
