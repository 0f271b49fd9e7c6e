/**
 * The largest request each RPC accepts, from the limits the code exports: the orchestrator's
 * REQUEST_LIMITS (engine/request-limits.ts: targets, pairs or slates, slate indices, per-row values)
 * and vss serving's SEARCH_LIMITS (256 queries × the page size reaching max_search_depth, 10,000
 * candidate ids). Each is also under the 16 MiB gRPC message limit (grpc.maxMessageBytes), which is checked here. Counts
 * can be lowered with LOAD_SCALE (0..1) for a quick run.
 */
import { OrchestratorRequestProto } from '../../src/gen/orchestrator/v1/orchestrator.js';
import { PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../src/gen/orchestrator/v1/types.js';
import {
  FilterOp,
  GetEmbeddingsRequest,
  ScoreCandidatesRequest,
  SearchRequest,
} from '../../src/gen/vss/v1/vss.js';
import { REQUEST_LIMITS } from '../../src/orchestrator/engine/request-limits.js';
import { SEARCH_LIMITS } from '../../src/vss/serving/request-limits.js';
import { LEGACY_ID } from '../../test/e2e/fuzz/orchestrator-rpcs.js';
import { DUO_ID } from '../../test/support/orchestrator-process.js';
import type { VectorFixture } from '../../test/support/vector-fixtures.js';

/** The default of settings grpc.maxMessageBytes. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface HeavyRequest {
  service: 'orchestrator' | 'vss';
  path: string;
  /** What makes it the largest, for the report. */
  shape: string;
  bytes: Uint8Array;
}

const fp32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};

export function heavyRequests(options: {
  scale: number;
  catalogs: readonly string[];
  fixture: VectorFixture;
}): HeavyRequest[] {
  const n = (limit: number) => Math.max(1, Math.floor(limit * options.scale));
  // Limits that bound several counts at once (per-row values, slate indices) are read when the code
  // has them; the largest request fills the tightest one.
  const limits = REQUEST_LIMITS as unknown as Record<string, number | undefined>;
  const values = limits.values ?? Number.POSITIVE_INFINITY;
  const slateIndices = limits.slateIndices ?? Number.POSITIVE_INFINITY;
  const groups = n(REQUEST_LIMITS.groups);
  // PointWise: every target carries 2 values. Pair/slate: each group 1 value, targets take the rest.
  const pointTargets = n(Math.min(REQUEST_LIMITS.targets, Math.floor(values / 2)));
  const groupTargets = n(Math.min(REQUEST_LIMITS.targets, Math.floor((values - REQUEST_LIMITS.groups) / 2)));
  const slateSize = Math.max(
    2,
    Math.min(REQUEST_LIMITS.slateSize, Math.floor(slateIndices / REQUEST_LIMITS.groups)),
  );
  const legacyIds = n(Math.min(REQUEST_LIMITS.targets, values));
  const schema = [
    { name: 'price', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
    { name: 'quality', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
  ];
  const weight = { name: 'weight', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 };
  const predict = (targets: number, extra: Partial<PredictRequest>): Uint8Array =>
    PredictRequest.encode({
      modelConfigId: DUO_ID,
      trackingId: 'load',
      contextFeatures: [],
      targetInputSchema: schema,
      targets: Array.from({ length: targets }, (_, i) => ({
        id: `t${i}`,
        featureValues: [fp32((i % 100) / 50 - 1), fp32((i % 37) / 18 - 1)],
      })),
      pairInputSchema: [],
      pairs: [],
      slateInputSchema: [],
      slates: [],
      returnTargetScores: true,
      ...extra,
    }).finish();
  const { fixture } = options;
  const vector = (i: number) => Array.from(fixture.vector(i % fixture.ids.length));
  const ids = Array.from(
    { length: n(SEARCH_LIMITS.candidateIds) },
    (_, i) => fixture.ids[i % fixture.ids.length]!,
  );
  const requests: HeavyRequest[] = [
    {
      service: 'orchestrator',
      path: '/orchestrator.v1.Predict/InferPointWise',
      shape: `${pointTargets} targets × 2 FP32 features + a context feature`,
      bytes: predict(pointTargets, { contextFeatures: [{ ...weight, value: fp32(1) }] }),
    },
    {
      service: 'orchestrator',
      path: '/orchestrator.v1.Predict/InferPairWise',
      shape: `${groupTargets} targets, ${groups} pairs`,
      bytes: predict(groupTargets, {
        pairInputSchema: [weight],
        pairs: Array.from({ length: groups }, (_, i) => ({
          firstTargetIndex: i % groupTargets,
          secondTargetIndex: (i * 7 + 1) % groupTargets,
          featureValues: [fp32(0.5)],
        })),
      }),
    },
    {
      service: 'orchestrator',
      path: '/orchestrator.v1.Predict/InferSlateWise',
      shape: `${groupTargets} targets, ${groups} slates of ${slateSize}`,
      bytes: predict(groupTargets, {
        slateInputSchema: [weight],
        slates: Array.from({ length: groups }, (_, i) => ({
          slateTargetIndices: Array.from({ length: slateSize }, (_, k) => (i + k * 7919) % groupTargets),
          featureValues: [fp32(0.5)],
        })),
      }),
    },
    {
      service: 'orchestrator',
      path: '/orchestrator.v1.Orchestrator/RetrieveModelScore',
      shape: `${legacyIds} catalog ids`,
      bytes: OrchestratorRequestProto.encode({
        modelConfigId: LEGACY_ID,
        trackingId: 'load',
        entities: [
          {
            entity: 'catalog_id',
            ids: Array.from({ length: legacyIds }, (_, i) => options.catalogs[i % options.catalogs.length]!),
            features: [],
          },
        ],
      }).finish(),
    },
    {
      service: 'vss',
      path: '/vss.v1.SimilaritySearch/Search',
      // The deepest Search accepted: max_queries queries whose pages together reach max_search_depth.
      shape: `${n(SEARCH_LIMITS.queries)} queries × page_size ${searchPageSize(n(SEARCH_LIMITS.queries))}, a filter, 2 attributes`,
      bytes: SearchRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        variant: 'organic',
        queries: Array.from({ length: n(SEARCH_LIMITS.queries) }, (_, i) => ({
          embedding: { values: vector(i * 13) },
          pageToken: '',
          filters: [{ field: 'price', op: FilterOp.FILTER_OP_LT, values: ['40'] }],
        })),
        pageSize: searchPageSize(n(SEARCH_LIMITS.queries)),
        searchWidth: 0,
        attributes: ['brand', 'price'],
        filters: [],
      }).finish(),
    },
    {
      service: 'vss',
      path: '/vss.v1.SimilaritySearch/GetEmbeddings',
      shape: `${ids.length} candidate ids`,
      bytes: GetEmbeddingsRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        candidateIds: ids,
      }).finish(),
    },
    {
      service: 'vss',
      path: '/vss.v1.SimilaritySearch/ScoreCandidates',
      shape: `${ids.length} candidate ids`,
      bytes: ScoreCandidatesRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        embedding: { values: vector(0) },
        candidateIds: ids,
      }).finish(),
    },
  ];
  for (const r of requests) {
    if (r.bytes.length > MAX_MESSAGE_BYTES)
      throw new Error(
        `${r.path}: ${r.bytes.length} bytes exceed the ${MAX_MESSAGE_BYTES}-byte message limit`,
      );
  }
  return requests;
}

/** The page size at which `queries` queries reach max_search_depth (and no more than a page may hold). */
function searchPageSize(queries: number): number {
  return Math.min(SEARCH_LIMITS.pageSize, Math.floor(SEARCH_LIMITS.depth / queries));
}
