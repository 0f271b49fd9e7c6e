/**
 * The retrieval stage of a model config (config `retrieval`, issue 40): before FeatureInit, each
 * retriever searches vss with a query taken from the request's context; their candidates are merged
 * (candidate-merge.ts) and become the request's targets, with the merged score, each retriever's
 * score and the attributes brought along as typed target columns that the DAG reads like any other
 * request column. A candidate a retriever did not return has that retriever's columns at the type's
 * default (0, "" — the same default a failed component leaves).
 *
 * The stage has its own deadline (`retrieval.deadline_ms`) inside the request's. A retriever that
 * fails or runs out of time contributes nothing and is named in the answer's `errors`, unless it is
 * `required`: then the call fails naming it. No candidate at all fails the call too (UNAVAILABLE naming
 * the failed retrievers, or NOT_FOUND when none failed). Only PointWise requests retrieve; a request that gives
 * targets itself to a retrieval config is refused (INVALID_ARGUMENT), so which targets were ranked is
 * never ambiguous.
 */
import { decodeValue, defaultValue, encodeValue } from '../../datatypes/codecs.js';
import { DataType } from '../../datatypes/data-type.js';
import { formatValue, parseValue } from '../../datatypes/value-text.js';
import type { ContextFeature, PredictRequest, Target } from '../../gen/orchestrator/v1/predict.js';
import type { DataType as WireType } from '../../gen/orchestrator/v1/types.js';
import { type Filter, FilterOp, type Query } from '../../gen/vss/v1/vss.js';
import { describeError, invalidArgument, isLatticeError, LatticeError } from '../../platform/errors.js';
import type { FeatureFetcher } from '../clients/feature-fetcher.js';
import type { VssSearch } from '../clients/vss-search-client.js';
import type { ModelSnapshot } from '../config/index.js';
import type { RetrievalConfig, RetrieverConfig } from '../config/retrieval-schema.js';
import {
  attributeColumn,
  attributeType,
  featureStoreFeature,
  queryVectorType,
  retrieverScoreColumn,
} from '../config/validate-retrieval.js';
import { mergeCandidates, type RetrievedCandidate } from './candidate-merge.js';
import type { InferenceRequest } from './feature-init.js';
import { predictRows } from './request-rows.js';

/** What retrievers call: vss, and the feature store for `feature_store_vector` queries. */
export interface RetrievalSources {
  vss?: VssSearch;
  features?: FeatureFetcher;
}

export interface RetrievalOptions {
  signal: AbortSignal;
  /** Epoch ms: the request's deadline. */
  deadline: number;
}

export interface Retrieved {
  /** The request to run: the input itself, or a copy whose targets are the retrieved candidates. */
  input: InferenceRequest;
  /** One line per retriever that failed without failing the call: `retriever <name>: <reason>`. */
  errors: string[];
}

const OPS: Record<RetrieverConfig['filters'][number]['op'], FilterOp> = {
  in: FilterOp.FILTER_OP_IN,
  not_in: FilterOp.FILTER_OP_NOT_IN,
  exists: FilterOp.FILTER_OP_EXISTS,
  not_exists: FilterOp.FILTER_OP_NOT_EXISTS,
  lt: FilterOp.FILTER_OP_LT,
  lte: FilterOp.FILTER_OP_LTE,
  gt: FilterOp.FILTER_OP_GT,
  gte: FilterOp.FILTER_OP_GTE,
  between: FilterOp.FILTER_OP_BETWEEN,
  between_inclusive: FilterOp.FILTER_OP_BETWEEN_INCLUSIVE,
};

/** Runs the config's retrieval stage when it has one; any other request passes through unchanged. */
export async function retrieveTargets(
  sources: RetrievalSources,
  snapshot: ModelSnapshot<unknown>,
  input: InferenceRequest,
  options: RetrievalOptions,
): Promise<Retrieved> {
  const retrieval = snapshot.model.config.retrieval;
  if (retrieval === undefined || input.pattern !== 'point') return { input, errors: [] };
  const request = input.request;
  if (predictRows(request).targets.count > 0 || request.targetInputSchema.length > 0)
    throw invalidArgument(
      `model config ${snapshot.id} retrieves its targets (retrieval); the request must not give targets or target_input_schema`,
      'targets',
    );
  const { vss, features } = sources;
  if (vss === undefined)
    throw new LatticeError('FAILED_PRECONDITION', 'retrieval needs the vss client, not configured here');
  const stageDeadline = Math.min(options.deadline, Date.now() + retrieval.deadline_ms);
  const context = new Map(request.contextFeatures.map((f) => [f.name, f]));
  const settled = await Promise.allSettled(
    retrieval.retrievers.map((r) =>
      runRetriever(vss, features, r, context, { signal: options.signal, deadline: stageDeadline }),
    ),
  );
  const errors: string[] = [];
  const answers = settled.map((outcome, i) => {
    const retriever = retrieval.retrievers[i]!;
    if (outcome.status === 'fulfilled') return outcome.value;
    const reason = describeError(outcome.reason);
    if (retriever.required) {
      const code = isLatticeError(outcome.reason, 'INVALID_ARGUMENT') ? 'INVALID_ARGUMENT' : 'UNAVAILABLE';
      throw new LatticeError(code, `required retriever ${retriever.name} failed: ${reason}`, {
        field: `retrieval.retrievers[${i}]`,
      });
    }
    errors.push(`retriever ${retriever.name}: ${reason}`);
    return [];
  });
  const targets = targetsOf(retrieval, answers);
  // Nothing to rank: every retriever failed (named), or none found a candidate (filters, an empty variant).
  if (targets.rows.length === 0) {
    if (errors.length > 0)
      throw new LatticeError('UNAVAILABLE', `no candidates: every retriever failed (${errors.join('; ')})`);
    throw new LatticeError('NOT_FOUND', 'no candidates: the retrievers found none for this request');
  }
  return {
    input: {
      pattern: 'point',
      // A fresh request (never the columnar one the wire may have decoded): its targets are the candidates.
      request: {
        modelConfigId: request.modelConfigId,
        trackingId: request.trackingId,
        contextFeatures: request.contextFeatures,
        targetInputSchema: targets.schema,
        targets: targets.rows,
        pairInputSchema: [],
        pairs: [],
        slateInputSchema: [],
        slates: [],
        returnTargetScores: request.returnTargetScores,
      } satisfies PredictRequest,
    },
    errors,
  };
}

/** One retriever's Search, best first; throws when it fails (a missing context value included). */
async function runRetriever(
  vss: VssSearch,
  features: FeatureFetcher | undefined,
  r: RetrieverConfig,
  context: ReadonlyMap<string, ContextFeature>,
  options: RetrievalOptions,
): Promise<RetrievedCandidate[]> {
  const query = await queryOf(vss, features, r, context, options);
  const filters: Filter[] = r.filters.map((f) => ({
    field: f.field,
    op: OPS[f.op],
    values: f.values_from === undefined ? f.values : [...f.values, ...contextTexts(context, f.values_from)],
  }));
  const response = await vss.search(
    r.target,
    {
      entity: r.entity,
      modelName: r.model,
      variant: r.variant,
      queries: [query],
      pageSize: r.k,
      attributes: r.attributes.map((a) => a.name),
      filters,
      searchWidth: 0,
    },
    options,
  );
  const result = response.results[0];
  if (result === undefined) throw new LatticeError('INTERNAL', `vss ${r.target} answered no result`);
  if (result.error !== '') throw new LatticeError('UNAVAILABLE', `vss ${r.target}: ${result.error}`);
  return result.candidates;
}

async function queryOf(
  vss: VssSearch,
  features: FeatureFetcher | undefined,
  r: RetrieverConfig,
  context: ReadonlyMap<string, ContextFeature>,
  options: RetrievalOptions,
): Promise<Query> {
  const { query } = r;
  const base = { pageToken: '', filters: [] };
  if (query.context_feature !== undefined) {
    const feature = contextFeature(context, query.context_feature);
    const value = decodeValue(feature.dataType as number as DataType, feature.value, feature.vectorDim);
    if (!(value instanceof Float32Array || value instanceof Float64Array))
      throw invalidArgument(
        `context feature ${query.context_feature} is not a float vector`,
        `context_features.${query.context_feature}`,
      );
    return { ...base, embedding: { values: Array.from(value) } };
  }
  if (query.candidate_id_from !== undefined)
    return { ...base, candidateId: contextText(context, query.candidate_id_from) };
  if (query.feature_store_vector !== undefined)
    return {
      ...base,
      embedding: { values: await featureStoreVector(features, query.feature_store_vector, context, options) },
    };
  const source = query.entity_embedding!;
  const id = contextText(context, source.id_from);
  const answer = await vss.getEmbeddings(
    r.target,
    { entity: source.entity, modelName: source.model, candidateIds: [id] },
    options,
  );
  const found = answer.embeddings.find((e) => e.id === id && e.found);
  const vector = found?.searchEmbedding?.values.length ? found.searchEmbedding : found?.embedding;
  if (vector === undefined)
    throw new LatticeError('NOT_FOUND', `no ${source.entity}/${source.model} embedding for id "${id}"`);
  return { ...base, embedding: vector };
}

/**
 * A context entity's vector feature from the feature store, within the stage's deadline: the entity
 * id is the context feature `id_from`, sent under the key name `key` (default `id_from`).
 */
async function featureStoreVector(
  features: FeatureFetcher | undefined,
  source: NonNullable<RetrieverConfig['query']['feature_store_vector']>,
  context: ReadonlyMap<string, ContextFeature>,
  options: RetrievalOptions,
): Promise<number[]> {
  if (features === undefined)
    throw new LatticeError(
      'FAILED_PRECONDITION',
      'feature_store_vector needs the feature store client, not configured here',
    );
  const { group, feature } = featureStoreFeature(source)!;
  const id = contextText(context, source.id_from);
  const rows = await features.retrieve(
    {
      entity: source.entity,
      keysSchema: [source.key ?? source.id_from],
      keys: [[id]],
      featureGroups: [{ label: group, features: [feature] }],
    },
    { signal: options.signal, deadline: options.deadline },
  );
  const bytes = rows[0]?.[0];
  if (bytes === undefined || bytes.length === 0)
    throw new LatticeError(
      'NOT_FOUND',
      `no ${source.column} in the feature store for ${source.entity} "${id}"`,
    );
  const value = decodeValue(queryVectorType(source.data_type)!, bytes, 0, source.column);
  return Array.from(value as Float32Array | Float64Array);
}

function contextFeature(context: ReadonlyMap<string, ContextFeature>, name: string): ContextFeature {
  const feature = context.get(name);
  if (feature === undefined)
    throw invalidArgument(`the request has no context feature ${name}`, `context_features.${name}`);
  return feature;
}

/** A context value as one text (its STRING, or a scalar formatted). */
function contextText(context: ReadonlyMap<string, ContextFeature>, name: string): string {
  const texts = contextTexts(context, name);
  if (texts.length !== 1)
    throw invalidArgument(
      `context feature ${name} holds ${texts.length} values, not one`,
      `context_features.${name}`,
    );
  return texts[0]!;
}

/** A context value as filter values: a STRING_VECTOR's elements, or the value as text. */
function contextTexts(context: ReadonlyMap<string, ContextFeature>, name: string): string[] {
  const feature = contextFeature(context, name);
  const type = feature.dataType as number as DataType;
  if (type === DataType.STRING_VECTOR) return decodeValue(type, feature.value, feature.vectorDim) as string[];
  if (type === DataType.STRING) return [decodeValue(type, feature.value) as string];
  return [formatValue(type, feature.value, feature.vectorDim, `context_features.${name}`)];
}

const fp32 = (x: number): Uint8Array => encodeValue(DataType.FP32, x);

interface Column {
  name: string;
  dataType: DataType;
}

/** The merged candidates as targets: the merged score, each retriever's score, then its attributes. */
function targetsOf(
  retrieval: RetrievalConfig,
  answers: readonly RetrievedCandidate[][],
): { schema: PredictRequest['targetInputSchema']; rows: Target[] } {
  const merged = mergeCandidates(
    answers.map((candidates, i) => {
      const r = retrieval.retrievers[i]!;
      return { quota: r.quota ?? r.k, candidates };
    }),
  );
  const schema: Column[] = [{ name: retrieval.score_column, dataType: DataType.FP32 }];
  const cells: ((row: number) => Uint8Array)[] = [(row) => fp32(merged.best[row]!)];
  retrieval.retrievers.forEach((r, i) => {
    const returned = merged.byRetriever[i]!;
    const zero = fp32(0);
    schema.push({ name: retrieverScoreColumn(r), dataType: DataType.FP32 });
    cells.push((row) => {
      const candidate = returned[row];
      return candidate === undefined ? zero : fp32(candidate.score);
    });
    for (const attribute of r.attributes) {
      const type = attributeType(attribute.data_type)!;
      const missing = defaultValue(type, 0);
      schema.push({ name: attributeColumn(attribute), dataType: type });
      cells.push((row) => {
        const text = returned[row]?.attributes[attribute.name];
        if (text === undefined) return missing;
        try {
          return parseValue(type, text);
        } catch {
          // An attribute vss holds as text this type cannot read is missing, as an absent one is.
          return missing;
        }
      });
    }
  });
  return {
    // The matrix's DataType and the wire's share their numbers.
    schema: schema.map((s) => ({ name: s.name, dataType: s.dataType as number as WireType, vectorDim: 0 })),
    rows: merged.ids.map((id, row) => ({ id, featureValues: cells.map((cell) => cell(row)) })),
  };
}
