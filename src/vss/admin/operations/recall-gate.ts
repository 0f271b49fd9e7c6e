/**
 * The recall gate of a reset (docs/vss.md "Recall gate and rollback"): before a variant is flipped
 * to a new version, recall@k of the version's approximate search is measured against an exact
 * search of the same version (the VectorDb port's `exact`), with the variant's filter, per
 * filter-selectivity bucket, and the flip happens only when every non-empty bucket reaches the
 * variant's `min_recall`.
 *
 * Queries: a sample of the version's stored vectors (`sampleSize` rows of its embeddings table,
 * spread by a hash of their id, each searched by its search embedding with itself excluded, as a
 * query by candidate id is served). Each sampled vector is asked twice: with the variant's filter
 * (its membership flag, and the expiry when the model's embeddings expire), and with that filter
 * and one attribute of the point's own payload (equal to its value; the attribute is chosen in turn
 * across the sample), which gives the narrow filters live traffic sends. Live queries are not used:
 * serving keeps no sample of them (its `vss_avg_recall` sampler measures and forgets), so the gate
 * measures on stored vectors only.
 *
 * Buckets: a query's selectivity is the share of the version's points its filters admit, estimated
 * on the sample's own payloads (read from the collection): `under_1pct` (< 1 %), `1_to_10pct`
 * (1 % to < 10 %), `over_10pct` (≥ 10 %). A query's recall is |approximate top k ∩ exact top k| ÷
 * |exact top k| (queries whose exact answer is empty are not counted); a bucket's is the mean.
 */
import {
  compileFilters,
  type Filter,
  matchesAll,
  type Payload,
  type VectorDb,
} from '../../../platform/vectordb/index.js';
import { EXPIRES_AT_FIELD, membershipFlag, searchWidthOf, unexpiredFilter } from '../../model/index.js';
import type { JsonObject, StoredEmbedding, Variant } from '../../store/index.js';

export const RECALL_BUCKETS = ['under_1pct', '1_to_10pct', 'over_10pct'] as const;
export type RecallBucket = (typeof RECALL_BUCKETS)[number];

export interface RecallGateSettings {
  /** Stored vectors sampled per version (`vss.admin.recallSampleSize`); default 200. */
  sampleSize: number;
  /** The k of recall@k (`vss.admin.recallK`); default 10, serving's default page size. */
  k: number;
}

export const RECALL_GATE_DEFAULTS: Readonly<RecallGateSettings> = { sampleSize: 200, k: 10 };

export interface BucketRecall {
  queries: number;
  recall: number;
}

export interface VariantRecall {
  variant: string;
  minRecall: number;
  /** Every non-empty bucket reached `minRecall`. */
  passed: boolean;
  queries: number;
  buckets: Partial<Record<RecallBucket, BucketRecall>>;
}

/** The bucket of a selectivity (share of the points a query's filters admit, 0..1). */
export function bucketOf(selectivity: number): RecallBucket {
  if (selectivity < 0.01) return 'under_1pct';
  if (selectivity < 0.1) return '1_to_10pct';
  return 'over_10pct';
}

/** A scalar payload attribute to narrow a query with: not a membership flag, not the expiry. */
function narrowingFields(payload: Payload | undefined): string[] {
  if (payload === undefined) return [];
  return Object.keys(payload)
    .filter((field) => {
      const value = payload[field];
      return (
        !field.startsWith('to_be_indexed_') &&
        field !== EXPIRES_AT_FIELD &&
        (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number')
      );
    })
    .sort();
}

interface GateQuery {
  id: string;
  vector: Float32Array;
  /** Beyond the variant's filter. */
  extra: Filter[];
  bucket: RecallBucket;
}

/** The gate's queries of one variant from the sampled rows and their payloads (aligned). */
function gateQueries(
  samples: readonly StoredEmbedding[],
  payloads: readonly (Payload | undefined)[],
  base: readonly Filter[],
): GateQuery[] {
  const known = payloads.filter((p): p is Payload => p !== undefined);
  const share = (filters: readonly Filter[]) => {
    if (known.length === 0) return 1;
    const compiled = compileFilters(filters);
    return known.filter((p) => matchesAll(p, compiled)).length / known.length;
  };
  const baseBucket = bucketOf(share(base));
  const queries: GateQuery[] = [];
  samples.forEach((sample, i) => {
    queries.push({ id: sample.id, vector: sample.searchEmbedding, extra: [], bucket: baseBucket });
    const payload = payloads[i];
    const fields = narrowingFields(payload);
    if (fields.length === 0) return;
    const field = fields[i % fields.length]!;
    const extra: Filter[] = [{ field, op: 'IN', values: [String(payload![field])] }];
    queries.push({
      id: sample.id,
      vector: sample.searchEmbedding,
      extra,
      bucket: bucketOf(share([...base, ...extra])),
    });
  });
  return queries;
}

/**
 * Queries per search call. Small: the embedded engine scans exactly on the event loop it shares with
 * serving in `lattice vss` (10 exact queries on 100,000 × 256 is about 0.1 s), and the measurement
 * yields between batches, so serving's calls interleave with it.
 */
const BATCH = 10;

/**
 * Measures recall@k of one variant on `collection` (see the module comment); `heartbeat` is called
 * between batches (a long measurement keeps its operation's lease).
 */
export async function measureVariantRecall(input: {
  db: VectorDb;
  collection: string;
  variant: Variant;
  samples: readonly StoredEmbedding[];
  k: number;
  /** The model's embeddings expire (the serving filter admits unexpired points only). */
  expiring: boolean;
  heartbeat?: () => Promise<void>;
}): Promise<VariantRecall> {
  const { db, collection, variant, samples, k } = input;
  const base: Filter[] = [
    { field: membershipFlag(variant.variant), op: 'IN', values: ['true'] },
    ...(input.expiring ? [unexpiredFilter(Date.now())] : []),
  ];
  const payloads =
    samples.length === 0
      ? []
      : (
          await db.getPoints(
            collection,
            samples.map((s) => s.id),
            { withVector: false, withPayload: true },
          )
        ).map((point) => point?.payload);
  const queries = gateQueries(samples, payloads, base);
  const sums = new Map<RecallBucket, BucketRecall>();
  for (let from = 0; from < queries.length; from += BATCH) {
    await input.heartbeat?.();
    await new Promise<void>((resolve) => setImmediate(resolve));
    const batch = queries.slice(from, from + BATCH);
    const request = {
      collection,
      queries: batch.map((q) => ({ vector: q.vector, excludeIds: [q.id], filters: q.extra })),
      filters: base,
      limit: k,
      indexedOnly: true,
      // The width serving searches the variant at (its live ef_search or registered one).
      efSearch: searchWidthOf(variant),
    };
    const approximate = await db.search(request);
    const exact = await db.search({ ...request, exact: true });
    batch.forEach((query, i) => {
      const truth = new Set((exact[i] ?? []).map((h) => h.id));
      if (truth.size === 0) return;
      let found = 0;
      for (const hit of approximate[i] ?? []) if (truth.has(hit.id)) found++;
      const bucket = sums.get(query.bucket) ?? { queries: 0, recall: 0 };
      bucket.queries++;
      bucket.recall += found / truth.size;
      sums.set(query.bucket, bucket);
    });
  }
  const buckets: Partial<Record<RecallBucket, BucketRecall>> = {};
  let counted = 0;
  for (const name of RECALL_BUCKETS) {
    const sum = sums.get(name);
    if (sum === undefined) continue;
    buckets[name] = { queries: sum.queries, recall: sum.recall / sum.queries };
    counted += sum.queries;
  }
  const passed = Object.values(buckets).every((b) => b.recall >= variant.minRecall);
  return { variant: variant.variant, minRecall: variant.minRecall, passed, queries: counted, buckets };
}

/** The figures kept on the version (`recall` of GET /models/…): snake_case JSON. */
export function recallFigures(k: number, sampleSize: number, measured: readonly VariantRecall[]): JsonObject {
  return {
    k,
    sample_size: sampleSize,
    query_sources: ['stored_vectors'],
    measured_at: new Date().toISOString(),
    passed: measured.every((m) => m.passed),
    variants: Object.fromEntries(
      measured.map((m) => [
        m.variant,
        {
          min_recall: m.minRecall,
          passed: m.passed,
          queries: m.queries,
          buckets: Object.fromEntries(
            Object.entries(m.buckets).map(([bucket, b]) => [
              bucket,
              { queries: b.queries, recall: round(b.recall) },
            ]),
          ),
        },
      ]),
    ),
  };
}

/** One line per failing variant, for the step's error. */
export function describeShortfall(k: number, version: number, measured: readonly VariantRecall[]): string {
  const failing = measured
    .filter((m) => !m.passed)
    .map(
      (m) =>
        `variant ${m.variant} (min_recall ${m.minRecall}): ${Object.entries(m.buckets)
          .map(([bucket, b]) => `${bucket} ${round(b.recall).toFixed(3)} over ${b.queries} queries`)
          .join(', ')}`,
    );
  return `recall@${k} of version ${version} is below min_recall: ${failing.join('; ')}. The variants keep serving their current version; tune the index (vectordb_config hnsw m, ef_construction, ef_search) or lower min_recall, then retry the operation`;
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
