/**
 * An example Predict request for a model config, in the proto3 JSON mapping of
 * `orchestrator.v1.PredictRequest` (lowerCamelCase names, enums by name, bytes in base64), which
 * the console's playground shows and sends to `POST /api/v1/rpc/orchestrator.v1.Predict/<Method>`.
 *
 * It is made from the config's feature schema: the target id column names the targets, every other
 * request feature a component reads per target is a context feature, one a slate compute reads is
 * a pair or slate feature. Ids are ones the feature store has rows for where a feature component
 * looks the column up (id-probe.ts), else made up from the column's name; other values are typed
 * as their reader declares them (a model input's data type; numbers for compute) and plausible.
 */

import { type EncodableValue, encodeValue } from '../../datatypes/codecs.js';
import { DataType, dataTypeInfo, lookupDataType } from '../../datatypes/data-type.js';
import type { FeatureFetcher } from '../clients/feature-fetcher.js';
import type { ValidatedModel } from '../config/index.js';
import { attributeColumn, retrieverScoreColumn } from '../config/validate-retrieval.js';
import { type ProbeTarget, probeIds } from './id-probe.js';

export type ExamplePattern = 'pointwise' | 'pairwise' | 'slatewise';

export interface FeatureJson {
  name: string;
  dataType: string;
  vectorDim?: number;
}

/** `orchestrator.v1.PredictRequest` in the proto3 JSON mapping (default values left out, as the mapping does). */
export interface PredictRequestJson {
  modelConfigId: string;
  contextFeatures?: (FeatureJson & { value: string })[];
  targetInputSchema?: FeatureJson[];
  targets: { id: string; featureValues?: string[] }[];
  pairInputSchema?: FeatureJson[];
  pairs?: { firstTargetIndex?: number; secondTargetIndex?: number; featureValues?: string[] }[];
  slateInputSchema?: FeatureJson[];
  slates?: { slateTargetIndices: number[]; featureValues?: string[] }[];
  returnTargetScores?: boolean;
}

/** How the example's ids were chosen, for the caller to say. */
export interface ExampleRequest {
  request: PredictRequestJson;
  /** Per id column: whether its ids were found in the feature store or made up. */
  ids: Record<string, 'feature store' | 'made up'>;
}

interface Feature {
  name: string;
  type: DataType;
  vectorDim: number;
}

const TARGETS: Record<ExamplePattern, number> = { pointwise: 3, pairwise: 4, slatewise: 4 };

export async function exampleRequest(
  model: ValidatedModel,
  pattern: ExamplePattern,
  fetcher: FeatureFetcher | undefined,
): Promise<ExampleRequest> {
  const { config } = model;
  const idColumn = config.target_id_column;
  const probes = probeTargets(model);
  const readers = requestFeatureReaders(model);
  const ids: ExampleRequest['ids'] = {};

  const idsFor = async (column: string, count: number): Promise<string[]> => {
    const probe = probes.get(column);
    if (probe !== undefined && fetcher !== undefined) {
      try {
        const found = await probeIds(fetcher, probe, count);
        if (found.length > 0) {
          ids[column] = 'feature store';
          // Fewer found than wanted: they repeat (a request may name a target twice).
          return Array.from({ length: count }, (_, i) => found[i % found.length]!);
        }
      } catch {
        // The feature store did not answer: made-up ids still make a well-formed request.
      }
    }
    ids[column] = 'made up';
    const stem = column.replace(/_?id$/i, '') || column;
    return Array.from({ length: count }, (_, i) => `${stem[0] ?? 'x'}${i + 1}`);
  };

  // A PointWise request to a retrieval config gives no targets: the retrievers find them from the context.
  const retrieving = config.retrieval !== undefined && pattern === 'pointwise';
  const targetIds = retrieving ? [] : await idsFor(idColumn, TARGETS[pattern]);
  const context: (FeatureJson & { value: string })[] = [];
  const slateFeatures: Feature[] = [];
  const fromRetrieval = new Set(retrieving ? retrievalColumns(config) : []);
  for (const source of retrieving ? retrievalContext(config) : []) {
    const value = (await idsFor(source.idColumn ? idColumn : source.name, 1))[0]!;
    const feature = { name: source.name, type: DataType.STRING, vectorDim: 0 };
    context.push({ ...featureJson(feature), value: base64(DataType.STRING, value, 0, source.name) });
    fromRetrieval.add(source.name);
  }
  for (const name of model.requestFeatures) {
    if (name === idColumn || fromRetrieval.has(name)) continue;
    const reader = readers.get(name);
    if (reader?.level === 'slate' && pattern !== 'pointwise') {
      slateFeatures.push({ name, type: reader.type, vectorDim: reader.vectorDim });
      continue;
    }
    const type = reader?.type ?? DataType.STRING;
    const vectorDim = reader?.vectorDim ?? 0;
    const value = type === DataType.STRING ? (await idsFor(name, 1))[0]! : plausible(type, vectorDim);
    context.push({ ...featureJson({ name, type, vectorDim }), value: base64(type, value, vectorDim, name) });
  }

  const request: PredictRequestJson = { modelConfigId: config.model_config_id, targets: [] };
  if (context.length > 0) request.contextFeatures = context;
  request.targets = targetIds.map((id) => ({ id }));
  const rowValues = () =>
    slateFeatures.length === 0
      ? {}
      : {
          featureValues: slateFeatures.map((f) =>
            base64(f.type, plausible(f.type, f.vectorDim), f.vectorDim, f.name),
          ),
        };
  if (pattern === 'pairwise') {
    if (slateFeatures.length > 0) request.pairInputSchema = slateFeatures.map(featureJson);
    // proto3 JSON leaves out a field at its default (index 0).
    request.pairs = [
      { secondTargetIndex: 1, ...rowValues() },
      { firstTargetIndex: 2, secondTargetIndex: 3, ...rowValues() },
    ];
    request.returnTargetScores = true;
  } else if (pattern === 'slatewise') {
    if (slateFeatures.length > 0) request.slateInputSchema = slateFeatures.map(featureJson);
    request.slates = [
      { slateTargetIndices: [0, 1, 2], ...rowValues() },
      { slateTargetIndices: [1, 2, 3], ...rowValues() },
    ];
    request.returnTargetScores = true;
  }
  return { request, ids };
}

/** Columns a feature component looks up by one key part: where ids from the feature store fit. */
function probeTargets(model: ValidatedModel): Map<string, ProbeTarget> {
  const probes = new Map<string, ProbeTarget>();
  for (const plan of model.components.values()) {
    if (plan.kind !== 'feature') continue;
    const { fs_keys: keys, feature_groups: groups, entity } = plan.config;
    if (keys.length !== 1 || keys[0]!.schema.length !== 1) continue;
    const column = keys[0]!.col;
    if (probes.has(column)) continue;
    probes.set(column, {
      entity,
      keyName: keys[0]!.schema[0]!,
      group: { label: groups[0]!.label, features: groups[0]!.features },
    });
  }
  return probes;
}

interface Reader {
  level: 'target' | 'slate';
  type: DataType;
  vectorDim: number;
}

/** How the first component reading each request feature types it. */
function requestFeatureReaders(model: ValidatedModel): Map<string, Reader> {
  const wanted = new Set(model.requestFeatures);
  const readers = new Map<string, Reader>();
  const read = (column: string, reader: Reader) => {
    if (wanted.has(column) && !readers.has(column)) readers.set(column, reader);
  };
  for (const plan of model.components.values()) {
    if (plan.kind === 'feature') {
      for (const key of plan.config.fs_keys)
        read(key.col, { level: 'target', type: DataType.STRING, vectorDim: 0 });
    } else if (plan.kind === 'model') {
      for (const input of plan.config.inputs) {
        const type = lookupDataType(input.data_type) ?? DataType.FP32;
        for (const column of input.features)
          read(column, { level: 'target', type: scalarOf(type), vectorDim: 0 });
      }
    } else {
      const type = plan.config.data_type === 'FP64' ? DataType.FP64 : DataType.FP32;
      for (const column of Object.values(plan.config.score_mapping))
        read(column, { level: plan.config.slate ? 'slate' : 'target', type, vectorDim: 0 });
    }
  }
  return readers;
}

const scalarOf = (type: DataType) =>
  type === DataType.UNSPECIFIED ? DataType.FP32 : dataTypeInfo(type).scalar;

function plausible(type: DataType, vectorDim: number): EncodableValue {
  const info = dataTypeInfo(type);
  const one = info.kind === 'string' ? 'a' : info.kind === 'bool' ? true : 1;
  if (!info.isVector) return one;
  return Array.from({ length: vectorDim > 0 ? vectorDim : 2 }, () => one) as EncodableValue;
}

function base64(type: DataType, value: EncodableValue, vectorDim: number, field: string): string {
  return Buffer.from(encodeValue(type, value, vectorDim, field)).toString('base64');
}

function featureJson(feature: Feature): FeatureJson {
  const json: FeatureJson = { name: feature.name, dataType: `DATA_TYPE_${DataType[feature.type]}` };
  if (feature.vectorDim !== 0) json.vectorDim = feature.vectorDim;
  return json;
}

/** The target columns a retrieval stage fills: never context features of an example. */
function retrievalColumns(config: ValidatedModel['config']): string[] {
  const retrieval = config.retrieval!;
  return [
    retrieval.score_column,
    ...retrieval.retrievers.flatMap((r) => [
      retrieverScoreColumn(r),
      ...r.attributes.map((a) => attributeColumn(a)),
    ]),
  ];
}

/**
 * The context features the retrievers read an id from (string queries), each once; `idColumn` when
 * it is a candidate id of the searched entity, which the targets' ids stand for. Vector queries and
 * filter values are left to the caller.
 */
function retrievalContext(config: ValidatedModel['config']): { name: string; idColumn: boolean }[] {
  const found = new Map<string, boolean>();
  for (const r of config.retrieval!.retrievers) {
    if (r.query.candidate_id_from !== undefined) found.set(r.query.candidate_id_from, true);
    if (r.query.entity_embedding !== undefined && !found.has(r.query.entity_embedding.id_from))
      found.set(r.query.entity_embedding.id_from, false);
  }
  return [...found].map(([name, idColumn]) => ({ name, idColumn }));
}
