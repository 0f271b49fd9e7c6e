/**
 * The orchestrator's four RPCs as fuzz targets: valid requests for the duo model (Predict) and the
 * fuzz_legacy model (RetrieveModelScore), structurally wrong variants of each with the status and
 * field they must be answered with, and the known-good requests checked between batches.
 */
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { type Entity, OrchestratorRequestProto } from '../../../src/gen/orchestrator/v1/orchestrator.js';
import { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../../src/gen/orchestrator/v1/types.js';
import { OrchestratorClient } from '../../../src/orchestrator/client.js';
import type { ModelConfigInput } from '../../../src/orchestrator/config/index.js';
import { REQUEST_LIMITS } from '../../../src/orchestrator/engine/request-limits.js';
import { DUO_ID, duoConfig, duoScore } from '../../support/orchestrator-process.js';
import type { ReferenceServers } from '../../support/stack.js';
import { concat, INVALID_UTF8, lengthDelimited } from './byte-mutations.js';
import { type Expectation, type FuzzCase, type FuzzRpc, hostileString, sized } from './fuzz-runner.js';
import type { Random } from './random.js';

export const LEGACY_ID = 'fuzz_legacy';

/**
 * A model the legacy entity API can drive: the catalog's price from the reference feature store
 * (required, so a failed fetch is UNAVAILABLE rather than a silent default), doubled by a compute.
 */
export function legacyConfig(): ModelConfigInput {
  return {
    model_config_id: LEGACY_ID,
    target_id_column: 'catalog_id',
    component_dependency: { catalog_features: ['double'], double: [] },
    feature_components: [
      {
        name: 'catalog_features',
        entity: 'catalog',
        deadline_ms: 10_000,
        required: true,
        fs_keys: [{ schema: ['catalog_id'], col: 'catalog_id' }],
        feature_groups: [{ label: 'stats', data_type: 'FP32', features: ['price'] }],
      },
    ],
    compute_components: [
      {
        name: 'double',
        expression: 'price 2 *',
        score_mapping: { price: 'catalog:stats:price' },
        output_column: 'price2',
        data_type: 'FP64',
      },
    ],
    response: { columns: ['price2'] },
  };
}

/**
 * The duo model with 10 s component deadlines instead of 2 s: the fuzz shares a loaded machine, and a
 * component timing out (UNAVAILABLE) would hide what the request itself was answered.
 */
export function fuzzDuoConfig(modelServer: string): ModelConfigInput {
  const config = duoConfig(modelServer);
  return {
    ...config,
    model_serving_components: config.model_serving_components?.map((c) => ({ ...c, deadline_ms: 10_000 })),
  };
}

const PREDICT_FIELDS = [
  'model_config_id',
  'tracking_id',
  'context_features',
  'target_input_schema',
  'targets',
  'pair_input_schema',
  'pairs',
  'slate_input_schema',
  'slates',
  'feature_values',
  'vector_dim',
  'data_type',
  'price',
  'quality',
  'weight',
];
const LEGACY_FIELDS = ['entities', 'model_config_id', 'ids', 'features', 'ids_feature_value', 'entity'];

const IA = (field?: RegExp): Expectation => ({ codes: [status.INVALID_ARGUMENT], field });
const ONLY = (...codes: status[]): Expectation => ({ codes });
/** An unknown model id: NOT_FOUND, or INVALID_ARGUMENT when it breaks a documented limit (length). */
const UNKNOWN_MODEL: Expectation = {
  codes: [status.NOT_FOUND, status.INVALID_ARGUMENT],
  field: /^model_config_id$/,
};

const fp32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};

/** A length other than `not`. */
function wrongLength(r: Random, not: number): number {
  return r.pick([0, 1, 2, 3, 5, 6, 7, 8, 9, 16, 100].filter((n) => n !== not));
}

type Pattern = 'point' | 'pair' | 'slate';

function validPredict(r: Random, pattern: Pattern): PredictRequest {
  const targets = 1 + r.int(6);
  const request: PredictRequest = {
    modelConfigId: DUO_ID,
    trackingId: `fuzz-${r.int(1e9)}`,
    contextFeatures: [],
    targetInputSchema: [
      { name: 'price', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
      { name: 'quality', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
    ],
    targets: Array.from({ length: targets }, (_, i) => ({
      id: `t${i}`,
      featureValues: [fp32(r.next() * 4 - 2), fp32(r.next() * 4 - 2)],
    })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: r.chance(0.5),
  };
  const weight = { name: 'weight', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 };
  if (pattern === 'point') request.contextFeatures.push({ ...weight, value: fp32(1) });
  else if (pattern === 'pair') {
    request.pairInputSchema = [weight];
    request.pairs = Array.from({ length: 1 + r.int(4) }, () => ({
      firstTargetIndex: r.int(targets),
      secondTargetIndex: r.int(targets),
      featureValues: [fp32(r.next())],
    }));
  } else {
    request.slateInputSchema = [weight];
    request.slates = Array.from({ length: 1 + r.int(4) }, () => ({
      slateTargetIndices: Array.from({ length: 1 + r.int(targets) }, () => r.int(targets)),
      featureValues: [fp32(r.next())],
    }));
  }
  return request;
}

type Mutation<T> = (request: T, r: Random) => { summary: string; expect: Expectation; raw?: Uint8Array };

/** A context feature name no other feature of the request has (two additions must not clash). */
const extraName = (q: PredictRequest) => `extra_${q.contextFeatures.length}`;

/** Mutations that only add an invalid context feature: one can follow another mutation without repairing it. */
const contextValueLength: Mutation<PredictRequest> = (q, r) => {
  const [type, size] = r.pick([
    [WireType.DATA_TYPE_FP64, 8],
    [WireType.DATA_TYPE_FP16, 2],
    [WireType.DATA_TYPE_INT64, 8],
    [WireType.DATA_TYPE_BOOL, 1],
    [WireType.DATA_TYPE_FP8E4M3, 1],
    [WireType.DATA_TYPE_UINT16, 2],
  ] as const);
  q.contextFeatures.push({
    name: extraName(q),
    dataType: type,
    vectorDim: 0,
    value: Buffer.alloc(wrongLength(r, size)),
  });
  return { summary: 'context value length', expect: IA(/^context_features\[\d+\]\.value/) };
};
const unknownContextType: Mutation<PredictRequest> = (q, r) => {
  q.contextFeatures.push({
    name: extraName(q),
    dataType: r.pick([0, 64, -5]) as WireType,
    vectorDim: 0,
    value: Buffer.alloc(4),
  });
  return { summary: 'unknown context data type', expect: IA(/^context_features\[\d+\]\.data_type/) };
};
const malformedStringVector: Mutation<PredictRequest> = (q, r) => {
  q.contextFeatures.push({
    name: extraName(q),
    dataType: WireType.DATA_TYPE_STRING_VECTOR,
    vectorDim: r.pick([0, 2]),
    value: Buffer.from([0xff, 0xff, 0, 0, 65]),
  });
  return { summary: 'malformed STRING_VECTOR', expect: IA(/^context_features\[\d+\]\.value/) };
};
const boolVectorTooShort: Mutation<PredictRequest> = (q, r) => {
  q.contextFeatures.push({
    name: extraName(q),
    dataType: WireType.DATA_TYPE_BOOL_VECTOR,
    vectorDim: 9 + r.int(7),
    value: Buffer.alloc(1),
  });
  return { summary: 'BOOL_VECTOR too short', expect: IA(/^context_features\[\d+\]\.value/) };
};
const CONTEXT_ADDITIONS = [contextValueLength, unknownContextType, malformedStringVector, boolVectorTooShort];

/** Structural mutations of a PredictRequest shared by the three patterns. */
const PREDICT_COMMON: Mutation<PredictRequest>[] = [
  ...CONTEXT_ADDITIONS,
  (q, r) => {
    const t = r.int(q.targets.length);
    const c = r.int(2);
    q.targets[t]!.featureValues[c] = Buffer.alloc(wrongLength(r, 4));
    return {
      summary: 'target value length',
      expect: IA(new RegExp(`^targets\\[${t}\\]\\.feature_values\\[${c}\\]`)),
    };
  },
  (q, r) => {
    const i = r.int(2);
    q.targetInputSchema[i]!.dataType = r.pick([0, 31, 77, 1000, -1, 2 ** 31 - 1]) as WireType;
    return {
      summary: `unknown data type ${q.targetInputSchema[i]!.dataType}`,
      expect: IA(/target_input_schema\[\d\]\.data_type/),
    };
  },
  (q, r) => {
    const i = r.int(2);
    const entry = q.targetInputSchema[i]!;
    entry.dataType = r.pick([
      WireType.DATA_TYPE_FP32_VECTOR,
      WireType.DATA_TYPE_FP64_VECTOR,
      WireType.DATA_TYPE_BOOL_VECTOR,
      WireType.DATA_TYPE_INT8_VECTOR,
      WireType.DATA_TYPE_STRING_VECTOR,
    ]);
    entry.vectorDim = r.pick([1e9, 2 ** 31 - 1, 123_456_789]);
    return {
      summary: `vector_dim ${entry.vectorDim}`,
      expect: IA(/^targets\[\d+\]\.feature_values\[\d\]|target_input_schema/),
    };
  },
  (q, r) => {
    q.targetInputSchema[r.int(2)]!.vectorDim = 3;
    return { summary: 'vector_dim on a scalar', expect: IA(/target_input_schema\[\d\]\.vector_dim/) };
  },
  (q, r) => {
    const entry = q.targetInputSchema[r.int(2)]!;
    entry.dataType = WireType.DATA_TYPE_FP32_VECTOR;
    entry.vectorDim = -1 - r.int(2 ** 31 - 1);
    return { summary: 'negative vector_dim', expect: IA(/target_input_schema\[\d\]\.vector_dim/) };
  },
  (q) => {
    q.targets = [];
    return { summary: 'no targets', expect: IA(/^targets$/) };
  },
  (q) => {
    q.modelConfigId = '';
    return { summary: 'empty model id', expect: IA(/^model_config_id$/) };
  },
  (q, r) => {
    q.modelConfigId = r.pick([
      'nope',
      'DUO',
      ' duo',
      'duo\u0000',
      'models/duo',
      '../duo',
      'ünïcode',
      sized('m', 1_000_000),
    ]);
    return {
      summary: `unknown model ${JSON.stringify(q.modelConfigId.slice(0, 12))}`,
      expect: UNKNOWN_MODEL,
    };
  },
  (_q, r) => {
    const raw = r.pick(INVALID_UTF8);
    return {
      summary: `invalid UTF-8 model id ${raw.join(',')}`,
      expect: ONLY(status.INVALID_ARGUMENT, status.NOT_FOUND),
      raw: lengthDelimited(1, raw),
    };
  },
  (q, r) => {
    q.trackingId = hostileString(r);
    return { summary: 'hostile tracking id', expect: ONLY(status.OK) };
  },
  (_q, r) => {
    const raw = r.pick(INVALID_UTF8);
    return {
      summary: 'invalid UTF-8 tracking id',
      expect: ONLY(status.OK, status.INVALID_ARGUMENT),
      raw: lengthDelimited(2, raw),
    };
  },
  (q, r) => {
    q.targets[r.int(q.targets.length)]!.id = hostileString(r);
    return { summary: 'hostile target id', expect: ONLY(status.OK) };
  },
  (q, r) => {
    const name = r.pick(['price', 'quality', 'item_id', 'p']);
    q.contextFeatures.push({ name, dataType: WireType.DATA_TYPE_FP32, vectorDim: 0, value: fp32(1) });
    return { summary: `duplicate name ${name}`, expect: IA(/^context_features\[\d+\]\.name$/) };
  },
  (q, r) => {
    q.targetInputSchema[1]!.name = r.pick(['price', 'item_id', 'p']);
    return { summary: 'duplicate target schema name', expect: IA(/^target_input_schema\[1\]\.name$/) };
  },
  (q, r) => {
    const i = r.int(2);
    q.targetInputSchema[i]!.name = r.pick(['', '\u0000']);
    // A NUL name is a name like another: the model then lacks its "price" or "quality" feature.
    return {
      summary: 'empty or NUL schema name',
      expect: IA(new RegExp(`target_input_schema\\[${i}\\]\\.name|price|quality`)),
    };
  },
  (q, r) => {
    const t = r.int(q.targets.length);
    q.targets[t]!.featureValues = r.pick([[], [fp32(1)], [fp32(1), fp32(2), fp32(3)]]);
    return {
      summary: 'feature_values count',
      expect: IA(new RegExp(`^targets\\[${t}\\]\\.feature_values$`)),
    };
  },
  (q) => {
    q.targetInputSchema = [q.targetInputSchema[0]!];
    for (const t of q.targets) t.featureValues = [t.featureValues[0]!];
    return { summary: 'missing request feature', expect: IA(/quality/) };
  },
  (q, r) => {
    const t = q.targets[r.int(q.targets.length)]!;
    t.featureValues[r.int(2)] = fp32(r.pick([Number.NaN, Number.POSITIVE_INFINITY, -3.4e38]));
    return { summary: 'NaN / infinite feature value', expect: ONLY(status.OK) };
  },
  (q, r) => {
    const which = r.int(3);
    if (which === 0) {
      q.targets = Array.from({ length: REQUEST_LIMITS.targets + 1 }, () => ({ id: '', featureValues: [] }));
      return { summary: 'targets over the limit', expect: IA(/^targets$/) };
    }
    if (which === 1) {
      const t = r.int(q.targets.length);
      q.targets[t]!.featureValues = Array.from({ length: 50_000 }, () => Buffer.alloc(0));
      return {
        summary: '50,000 feature_values on a target',
        expect: IA(new RegExp(`^targets\\[${t}\\]\\.feature_values`)),
      };
    }
    q.targetInputSchema = Array.from({ length: REQUEST_LIMITS.features + 1 }, (_, i) => ({
      name: `f${i}`,
      dataType: WireType.DATA_TYPE_BOOL,
      vectorDim: 0,
    }));
    return { summary: 'schema entries over the limit', expect: IA(/schema|context_features/) };
  },
];

const PAIR: Mutation<PredictRequest>[] = [
  (q, r) => {
    const p = r.int(q.pairs.length);
    const bad = r.pick([q.targets.length, q.targets.length + 7, -1, -(2 ** 31), 2 ** 31 - 1]);
    const which = r.chance(0.5) ? 'first' : 'second';
    if (which === 'first') q.pairs[p]!.firstTargetIndex = bad;
    else q.pairs[p]!.secondTargetIndex = bad;
    return {
      summary: `pair index ${bad}`,
      expect: IA(new RegExp(`^pairs\\[${p}\\]\\.${which}_target_index$`)),
    };
  },
  (q) => {
    q.pairs = [];
    return { summary: 'no pairs', expect: IA(/^pairs$/) };
  },
  (q, r) => {
    const p = r.int(q.pairs.length);
    q.pairs[p]!.featureValues = [Buffer.alloc(wrongLength(r, 4))];
    return {
      summary: 'pair value length',
      expect: IA(new RegExp(`^pairs\\[${p}\\]\\.feature_values\\[0\\]`)),
    };
  },
  (q) => {
    q.pairInputSchema.push({ name: 'weight', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 });
    for (const p of q.pairs) p.featureValues.push(fp32(1));
    return { summary: 'duplicate pair schema name', expect: IA(/^pair_input_schema\[1\]\.name$/) };
  },
  (q) => {
    q.pairInputSchema = [];
    for (const p of q.pairs) p.featureValues = [];
    return { summary: 'missing pair feature', expect: IA(/weight/) };
  },
];

const SLATE: Mutation<PredictRequest>[] = [
  (q, r) => {
    const s = r.int(q.slates.length);
    const slate = q.slates[s]!;
    const k = r.int(slate.slateTargetIndices.length);
    slate.slateTargetIndices[k] = r.pick([
      q.targets.length,
      q.targets.length + 3,
      -1,
      -(2 ** 31),
      2 ** 31 - 1,
    ]);
    return {
      summary: 'slate index',
      expect: IA(new RegExp(`^slates\\[${s}\\]\\.slate_target_indices\\[${k}\\]$`)),
    };
  },
  (q, r) => {
    const s = r.int(q.slates.length);
    q.slates[s]!.slateTargetIndices = [];
    return { summary: 'empty slate', expect: IA(new RegExp(`^slates\\[${s}\\]\\.slate_target_indices$`)) };
  },
  (q) => {
    q.slates = [];
    return { summary: 'no slates', expect: IA(/^slates$/) };
  },
  (q) => {
    q.slates[0]!.slateTargetIndices = new Array<number>(REQUEST_LIMITS.slateSize + 1).fill(0);
    return { summary: 'slate over the size limit', expect: IA(/^slates\[0\]\.slate_target_indices$/) };
  },
  (q, r) => {
    const s = r.int(q.slates.length);
    q.slates[s]!.featureValues = r.pick([[], [fp32(1), fp32(2)]]);
    return {
      summary: 'slate feature_values count',
      expect: IA(new RegExp(`^slates\\[${s}\\]\\.feature_values$`)),
    };
  },
  (q, r) => {
    q.slateInputSchema[0]!.dataType = r.pick([0, 99]) as WireType;
    return { summary: 'unknown slate data type', expect: IA(/^slate_input_schema\[0\]\.data_type$/) };
  },
];

/**
 * What a request broken by `first` and then by `added` (INVALID_ARGUMENT) may be answered: no longer
 * OK, and an INVALID_ARGUMENT names the field of either (any field when `first` allowed one unnamed).
 */
function alsoInvalid(first: Expectation, added: Expectation): Expectation {
  const codes = [...new Set([...first.codes.filter((c) => c !== status.OK), status.INVALID_ARGUMENT])];
  if (!first.codes.includes(status.INVALID_ARGUMENT)) return { codes, field: added.field };
  if (first.field === undefined || added.field === undefined) return { codes };
  return { codes, field: new RegExp(`(?:${first.field.source})|(?:${added.field.source})`) };
}

function encodePredict(q: PredictRequest): Uint8Array {
  return PredictRequest.encode(q).finish();
}

function predictRpc(
  method: 'InferPointWise' | 'InferPairWise' | 'InferSlateWise',
  pattern: Pattern,
): FuzzRpc {
  const own = pattern === 'pair' ? PAIR : pattern === 'slate' ? SLATE : [];
  const pool = [...PREDICT_COMMON, ...own];
  // The over-the-limit mutation is the last common one; it is drawn rarely (its messages are large).
  const big = PREDICT_COMMON.length - 1;
  return {
    service: 'orchestrator',
    path: `/orchestrator.v1.Predict/${method}`,
    fieldNames: PREDICT_FIELDS,
    valid: (r) => encodePredict(validPredict(r, pattern)),
    structural: (r): FuzzCase => {
      const q = validPredict(r, pattern);
      let index = r.int(pool.length);
      if (index === big && !r.chance(0.05)) index = r.int(big);
      let { summary, expect, raw } = pool[index]!(q, r);
      // Now and then a second mutation that only adds an invalid context feature: either may be the
      // one answered, and the first must not hide the second.
      if (r.chance(0.2)) {
        const added = r.pick(CONTEXT_ADDITIONS)(q, r);
        summary = `${summary} + ${added.summary}`;
        expect = alsoInvalid(expect, added.expect);
      }
      const bytes = raw ? concat(encodePredict(q), raw) : encodePredict(q);
      return { bytes, summary, expect };
    },
    byteLevel: [status.OK, status.INVALID_ARGUMENT, status.NOT_FOUND],
  };
}

// --- Legacy entity API ----------------------------------------------------------------------------

function validLegacy(r: Random, catalogIds: readonly string[]): OrchestratorRequestProto {
  const n = 1 + r.int(6);
  const ids = Array.from({ length: n }, () => r.pick(catalogIds));
  const entities: Entity[] = [{ entity: 'catalog_id', ids, features: [] }];
  if (r.chance(0.5)) entities.push({ entity: 'user_id', ids: ['u1'], features: [] });
  if (r.chance(0.3))
    entities[0]!.features.push({ name: 'note', idsFeatureValue: r.chance(0.5) ? ['x'] : ids.map(() => 'y') });
  return { entities, modelConfigId: LEGACY_ID, trackingId: `fuzz-${r.int(1e9)}` };
}

const LEGACY: Mutation<OrchestratorRequestProto>[] = [
  (q) => {
    q.entities = [];
    return { summary: 'no entities', expect: IA(/^entities$/) };
  },
  (q) => {
    for (const e of q.entities) e.ids = [];
    return { summary: 'every ids list empty', expect: IA(/^entities/) };
  },
  (q, r) => {
    const i = r.int(q.entities.length);
    q.entities[i]!.entity = '';
    return { summary: 'empty entity label', expect: IA(new RegExp(`^entities\\[${i}\\]\\.entity$`)) };
  },
  (q) => {
    q.entities.push({ entity: 'catalog_id', ids: ['c1'], features: [] });
    return { summary: 'duplicate entity label', expect: IA(/^entities\[\d+\]\.entity$/) };
  },
  (q, r) => {
    const ids = q.entities[0]!.ids;
    q.entities[0]!.features.push({
      name: 'bad',
      idsFeatureValue: ids.length === 1 ? ['a', 'b'] : ids.concat(['extra']),
    });
    void r;
    return { summary: 'feature value count', expect: IA(/^entities\[0\]\.features\[\d+\]\.name$/) };
  },
  (q, r) => {
    q.entities[0]!.features.push({ name: r.pick(['catalog_id', '']), idsFeatureValue: ['v'] });
    return {
      summary: 'feature named like an entity, or empty',
      expect: IA(/^entities\[0\]\.features\[\d+\]\.name$/),
    };
  },
  (q) => {
    // Neither list of length 1 (that one would be broadcast): 2 or more ids against one more.
    if (q.entities[0]!.ids.length === 1) q.entities[0]!.ids.push('c2');
    q.entities[0]!.features = [];
    const other = [...q.entities[0]!.ids, 'c3'];
    q.entities.push({ entity: 'other', ids: other, features: [] });
    return { summary: 'entities of different lengths', expect: IA(/^entities\[\d+\]\.entity$/) };
  },
  (q) => {
    q.modelConfigId = '';
    return { summary: 'empty model id', expect: IA(/^model_config_id$/) };
  },
  (q, r) => {
    q.modelConfigId = r.pick(['nope', 'fuzz_legacy\u0000', sized('m', 100_000), 'ünïcode']);
    return { summary: 'unknown model', expect: UNKNOWN_MODEL };
  },
  (_q, r) => {
    return {
      summary: 'invalid UTF-8 model id',
      expect: ONLY(status.INVALID_ARGUMENT, status.NOT_FOUND),
      raw: lengthDelimited(2, r.pick(INVALID_UTF8)),
    };
  },
  (q, r) => {
    const ids = q.entities[0]!.ids;
    ids[r.int(ids.length)] = hostileString(r);
    // An id the feature store does not hold is served with defaults and a row error.
    return { summary: 'hostile or unknown catalog id', expect: ONLY(status.OK) };
  },
  (q) => {
    q.entities[0]!.ids = Array.from({ length: REQUEST_LIMITS.targets + 1 }, (_, i) => `c${i % 50}`);
    q.entities.length = 1;
    return { summary: 'ids over the limit', expect: IA(/^entities/) };
  },
];

function legacyRpc(catalogIds: readonly string[]): FuzzRpc {
  const big = LEGACY.length - 1;
  return {
    service: 'orchestrator',
    path: '/orchestrator.v1.Orchestrator/RetrieveModelScore',
    fieldNames: LEGACY_FIELDS,
    valid: (r) => OrchestratorRequestProto.encode(validLegacy(r, catalogIds)).finish(),
    structural: (r) => {
      const q = validLegacy(r, catalogIds);
      let index = r.int(LEGACY.length);
      if (index === big && !r.chance(0.05)) index = r.int(big);
      const { summary, expect, raw } = LEGACY[index]!(q, r);
      const encoded = OrchestratorRequestProto.encode(q).finish();
      return { bytes: raw ? concat(encoded, raw) : encoded, summary, expect };
    },
    byteLevel: [status.OK, status.INVALID_ARGUMENT, status.NOT_FOUND],
  };
}

export function orchestratorRpcs(servers: Pick<ReferenceServers, 'data'>): FuzzRpc[] {
  const catalogIds = servers.data.rows.catalog.map((row) => row.key[0]!);
  return [
    predictRpc('InferPointWise', 'point'),
    predictRpc('InferPairWise', 'pair'),
    predictRpc('InferSlateWise', 'slate'),
    legacyRpc(catalogIds),
  ];
}

/** The known-good requests: a pair-wise duo request and a legacy request, checked against independent expectations. */
export function orchestratorKnownGood(
  address: string,
  servers: Pick<ReferenceServers, 'data'>,
): { check(): Promise<void>; close(): void } {
  const client = new OrchestratorClient(address);
  const catalogs = servers.data.rows.catalog.slice(0, 5);
  return {
    check: async () => {
      const { targets, pairs } = await client.pairWise({
        modelConfigId: DUO_ID,
        targets: [
          { id: 'a', features: { price: 1, quality: 0.5 } },
          { id: 'b', features: { price: -1, quality: 2 } },
        ],
        pairs: [{ first: 1, second: 0, features: { weight: 0.5 } }],
        schema: { price: 'FP32', quality: 'FP32', weight: 'FP32' },
        returnTargetScores: true,
        deadlineMs: 10_000,
      });
      assert.ok(Math.abs((targets[0]!.values.p as number) - duoScore(1, 0.5)) < 1e-6, 'known-good duo score');
      assert.ok(
        Math.abs((pairs[0]!.values.slate_score as number) - (5 + duoScore(-1, 2))) < 1e-5,
        'known-good slate score',
      );
      const { rows } = await client.retrieveModelScore({
        modelConfigId: LEGACY_ID,
        entities: [{ entity: 'catalog_id', ids: catalogs.map((c) => c.key[0]!) }],
        deadlineMs: 10_000,
      });
      assert.equal(rows.length, catalogs.length, 'known-good legacy rows');
      rows.forEach((row, i) => {
        const price = Math.fround(Number(catalogs[i]!.values.stats!.price));
        assert.equal(row.catalog_id, catalogs[i]!.key[0]);
        assert.ok(
          Math.abs(Number(row.price2) - 2 * price) < 1e-4,
          `known-good legacy price2 ${row.price2} vs ${2 * price}`,
        );
      });
    },
    close: () => client.close(),
  };
}
