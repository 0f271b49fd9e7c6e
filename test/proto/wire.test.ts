/**
 * The .proto contracts: generated code round-trips every package, the wire-compatible packages
 * decode bytes laid out by their published field numbers, DataType keeps the design's numbers, every
 * file loads with proto-loader (used for server reflection), and a generated service answers over a
 * real loopback gRPC connection.
 */
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { credentials, Metadata, Server, ServerCredentials } from '@grpc/grpc-js';
import {
  type EnumTypeDefinition,
  loadSync,
  type PackageDefinition,
  type ServiceDefinition,
} from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import {
  GRPCInferenceServiceService,
  InferParameter,
  ModelInferRequest,
  ModelInferResponse,
  ModelMetadataResponse,
} from '../../src/gen/inference/grpc_service.js';
import {
  EntityScoreData,
  NumerixClient,
  NumerixRequestProto,
  NumerixResponseProto,
  type NumerixServer,
  NumerixService,
} from '../../src/gen/numerix/numerix.js';
import { LogCompression, LogFormat, LogRows, OrchestratorLog } from '../../src/gen/orchestrator/v1/log.js';
import {
  OrchestratorRequestProto,
  OrchestratorResponseProto,
  OrchestratorService,
} from '../../src/gen/orchestrator/v1/orchestrator.js';
import {
  ContextFeature,
  PredictRequest,
  PredictResponse,
  PredictService,
} from '../../src/gen/orchestrator/v1/predict.js';
import { DataType, FeatureSchema } from '../../src/gen/orchestrator/v1/types.js';
import { FeatureServiceService, Query, Result } from '../../src/gen/retrieve/retrieve.js';
import {
  FilterOp,
  GetEmbeddingsResponse,
  ScoreCandidatesRequest,
  SearchRequest,
  SearchResponse,
  SimilaritySearchService,
} from '../../src/gen/vss/v1/vss.js';

const protoDir = fileURLToPath(new URL('../../proto/', import.meta.url));

/** Every .proto file under proto/, relative to it (as imports name them). */
function protoFiles(dir = protoDir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return protoFiles(path);
    return name.endsWith('.proto') ? [relative(protoDir, path)] : [];
  });
}

/** Writes a length-delimited submessage as field `no`, its body built by `body`. */
function message(w: BinaryWriter, no: number, body: (w: BinaryWriter) => void): BinaryWriter {
  w.tag(no, WireType.LengthDelimited).fork();
  body(w);
  return w.join();
}

function str(w: BinaryWriter, no: number, value: string): BinaryWriter {
  return w.tag(no, WireType.LengthDelimited).string(value);
}

function bytes(w: BinaryWriter, no: number, value: Uint8Array): BinaryWriter {
  return w.tag(no, WireType.LengthDelimited).bytes(value);
}

function f32le(...values: number[]): Buffer {
  const buf = Buffer.alloc(4 * values.length);
  for (const [i, v] of values.entries()) buf.writeFloatLE(v, 4 * i);
  return buf;
}

interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

/**
 * Decoded bytes fields are Uint8Array views (ts-proto env=both); the expectations here are written
 * with Buffers. Both are compared as plain Uint8Arrays, so a value differs only in its bytes.
 */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

function sameValue(actual: unknown, expected: unknown, message?: string): void {
  assert.deepEqual(plain(actual), plain(expected), message);
}

function roundTrip<T>(codec: Codec<T>, value: T): void {
  sameValue(codec.decode(codec.encode(value).finish()), value);
}

describe('generated code round-trips a message of every package', () => {
  it('orchestrator.v1: PredictRequest, PredictResponse and the legacy API', () => {
    roundTrip(
      PredictRequest,
      PredictRequest.fromPartial({
        modelConfigId: 'catalog_ranker',
        trackingId: 'trk-1',
        contextFeatures: [
          { name: 'user_id', dataType: DataType.DATA_TYPE_STRING, value: Buffer.from('u-42') },
          { name: 'user_vec', dataType: DataType.DATA_TYPE_FP32_VECTOR, vectorDim: 2, value: f32le(0.5, -1) },
        ],
        targetInputSchema: [{ name: 'price', dataType: DataType.DATA_TYPE_FP32 }],
        targets: [
          { id: 'c1', featureValues: [f32le(9.5)] },
          { id: 'c2', featureValues: [f32le(3.25)] },
        ],
        pairInputSchema: [{ name: 'same_brand', dataType: DataType.DATA_TYPE_BOOL }],
        pairs: [{ firstTargetIndex: 0, secondTargetIndex: 1, featureValues: [Buffer.from([1])] }],
        slateInputSchema: [{ name: 'position_bias', dataType: DataType.DATA_TYPE_FP16 }],
        slates: [{ slateTargetIndices: [1, 0], featureValues: [Buffer.from([0x00, 0x3c])] }],
        returnTargetScores: true,
      }),
    );
    roundTrip(
      PredictResponse,
      PredictResponse.fromPartial({
        trackingId: 'trk-1',
        targetOutputSchema: [{ name: 'ctr', dataType: DataType.DATA_TYPE_FP32 }],
        targetScores: [{ outputValues: [f32le(0.25)] }, { outputValues: [f32le(0)], error: 'ranker failed' }],
        pairOutputSchema: [{ name: 'preference', dataType: DataType.DATA_TYPE_FP64 }],
        pairScores: [{ outputValues: [Buffer.alloc(8)] }],
        slateOutputSchema: [{ name: 'slate_score', dataType: DataType.DATA_TYPE_FP32 }],
        slateScores: [{ outputValues: [f32le(1.5)] }],
        servedModelConfigId: 'catalog_ranker_v2',
      }),
    );
    roundTrip(
      OrchestratorRequestProto,
      OrchestratorRequestProto.fromPartial({
        entities: [
          {
            entity: 'catalog_id',
            ids: ['1', '2'],
            features: [{ name: 'price', idsFeatureValue: ['9.5', '3.25'] }],
          },
        ],
        modelConfigId: 'catalog_ranker',
        trackingId: 'trk-2',
      }),
    );
    roundTrip(
      OrchestratorResponseProto,
      OrchestratorResponseProto.fromPartial({
        componentData: [{ data: ['catalog_id', 'ctr'] }, { data: ['1', '0.25'] }],
        error: { message: '' },
      }),
    );
  });

  it('orchestrator.v1: OrchestratorLog carrying a LogRows payload', () => {
    const rows = LogRows.fromPartial({
      rows: [
        { values: [f32le(0.25), Buffer.from('red')] },
        { values: [f32le(0), Buffer.from('')], defaultedColumns: [0, 1] },
      ],
    });
    roundTrip(LogRows, rows);
    const log = OrchestratorLog.fromPartial({
      userId: 'u-42',
      trackingId: 'trk-1',
      modelConfigId: 'catalog_ranker',
      configVersion: '17',
      createdAtMs: 1_767_225_600_123n,
      entityIds: ['c1', 'c2'],
      schema: [
        { name: 'ctr', dataType: DataType.DATA_TYPE_FP32 },
        { name: 'catalog:attributes:color', dataType: DataType.DATA_TYPE_STRING },
      ],
      format: LogFormat.LOG_FORMAT_PROTO,
      compression: LogCompression.LOG_COMPRESSION_NONE,
      payload: Buffer.from(LogRows.encode(rows).finish()),
      metadata: { tenant: 'web', sampled_by: 'logging_perc' },
    });
    roundTrip(OrchestratorLog, log);
    const decoded = OrchestratorLog.decode(OrchestratorLog.encode(log).finish());
    assert.equal(decoded.createdAtMs, 1_767_225_600_123n);
    sameValue(LogRows.decode(decoded.payload), rows);
  });

  it('vss.v1: SearchRequest with both query kinds, and the other responses', () => {
    roundTrip(
      SearchRequest,
      SearchRequest.fromPartial({
        entity: 'catalog',
        modelName: 'two_tower',
        variant: 'organic',
        queries: [
          { candidateId: 'c1', filters: [{ field: 'in_stock', op: FilterOp.FILTER_OP_EXISTS }] },
          { embedding: { values: [0.5, -0.25, 1] }, pageToken: 'tok-2' },
        ],
        pageSize: 20,
        attributes: ['color'],
        filters: [{ field: 'price', op: FilterOp.FILTER_OP_BETWEEN_INCLUSIVE, values: ['10', '20'] }],
      }),
    );
    roundTrip(
      SearchResponse,
      SearchResponse.fromPartial({
        results: [
          { candidates: [{ id: 'c7', score: 0.75, attributes: { color: 'red' } }], nextPageToken: 'p2' },
          { error: 'unknown candidate c404' },
        ],
      }),
    );
    roundTrip(
      GetEmbeddingsResponse,
      GetEmbeddingsResponse.fromPartial({
        embeddings: [
          { id: 'c1', found: true, embedding: { values: [1, 0] }, searchEmbedding: { values: [0, 1] } },
          { id: 'c404', found: false },
        ],
      }),
    );
    roundTrip(
      ScoreCandidatesRequest,
      ScoreCandidatesRequest.fromPartial({
        entity: 'catalog',
        modelName: 'two_tower',
        embedding: { values: [0.5, 0.5] },
        candidateIds: ['c1', 'c2'],
      }),
    );
  });

  it('retrieve: Result', () => {
    roundTrip(
      Result,
      Result.fromPartial({
        entityLabel: 'catalog',
        keysSchema: ['catalog_id'],
        featureSchemas: [{ featureGroupLabel: 'stats', features: [{ label: 'price', columnIdx: 0 }] }],
        rows: [{ keys: ['1'], columns: [f32le(9.5)] }],
      }),
    );
  });

  it('inference: ModelInferRequest, ModelInferResponse and ModelMetadataResponse', () => {
    roundTrip(
      ModelInferRequest,
      ModelInferRequest.fromPartial({
        modelName: 'ctr',
        modelVersion: '1',
        id: 'req-1',
        parameters: {
          sequence_id: { uint64Param: 18_446_744_073_709_551_615n },
          priority: { doubleParam: 0.5 },
        },
        inputs: [
          {
            name: 'features',
            datatype: 'FP32',
            shape: [2n, 4n],
            parameters: { binary: { boolParam: true } },
          },
        ],
        outputs: [{ name: 'score' }],
        rawInputContents: [f32le(1, 2, 3, 4, 5, 6, 7, 8)],
      }),
    );
    roundTrip(
      ModelInferResponse,
      ModelInferResponse.fromPartial({
        modelName: 'ctr',
        outputs: [
          { name: 'score', datatype: 'FP32', shape: [2n, 1n], contents: { fp32Contents: [0.25, 0.75] } },
        ],
        rawOutputContents: [f32le(0.25, 0.75)],
      }),
    );
    roundTrip(
      ModelMetadataResponse,
      ModelMetadataResponse.fromPartial({
        name: 'ctr',
        versions: ['1', '2'],
        platform: 'onnxruntime_onnx',
        inputs: [{ name: 'features', datatype: 'FP32', shape: [-1n, 4n] }],
        outputs: [{ name: 'score', datatype: 'FP32', shape: [-1n, 1n] }],
      }),
    );
  });

  it('numerix: request with byte rows and both response arms', () => {
    roundTrip(
      NumerixRequestProto,
      NumerixRequestProto.fromPartial({
        entityScoreData: {
          schema: ['catalog_id', 'ctr'],
          entityScores: [{ byteData: { values: [Buffer.from('c1'), f32le(0.5)] } }],
          computeId: 'blend',
          dataType: 'fp32',
        },
      }),
    );
    roundTrip(
      NumerixResponseProto,
      NumerixResponseProto.fromPartial({
        computationScoreData: {
          schema: ['catalog_id', 'score'],
          computationScores: [{ stringData: { values: ['c1', '0.5'] } }],
        },
      }),
    );
    roundTrip(
      NumerixResponseProto,
      NumerixResponseProto.fromPartial({ error: { message: 'division by zero' } }),
    );
  });
});

describe('wire compatibility with the published field numbers', () => {
  it('keeps the external method paths that existing servers answer on', () => {
    assert.equal(FeatureServiceService.retrieveFeatures.path, '/retrieve.FeatureService/RetrieveFeatures');
    assert.equal(
      FeatureServiceService.retrieveDecodedResult.path,
      '/retrieve.FeatureService/RetrieveDecodedResult',
    );
    assert.equal(GRPCInferenceServiceService.modelInfer.path, '/inference.GRPCInferenceService/ModelInfer');
    assert.equal(GRPCInferenceServiceService.serverReady.path, '/inference.GRPCInferenceService/ServerReady');
    assert.equal(GRPCInferenceServiceService.modelReady.path, '/inference.GRPCInferenceService/ModelReady');
    assert.equal(
      GRPCInferenceServiceService.modelMetadata.path,
      '/inference.GRPCInferenceService/ModelMetadata',
    );
    assert.equal(NumerixService.compute.path, '/numerix.Numerix/Compute');
  });

  it('retrieve.Query: entity_label 1, feature_groups 2, keys_schema 3, keys 4 (Keys.cols 1)', () => {
    const w = new BinaryWriter();
    str(w, 1, 'user_category');
    message(w, 2, (g) => str(str(str(g, 1, 'agg'), 2, 'clicks_30d'), 2, 'views_30d'));
    str(w, 3, 'user_id');
    str(w, 3, 'category_id');
    message(w, 4, (k) => str(str(k, 1, 'u-42'), 1, '7'));
    message(w, 4, (k) => str(str(k, 1, 'u-42'), 1, '9'));
    const wire = w.finish();

    const query = Query.decode(wire);
    sameValue(query, {
      entityLabel: 'user_category',
      featureGroups: [{ label: 'agg', featureLabels: ['clicks_30d', 'views_30d'] }],
      keysSchema: ['user_id', 'category_id'],
      keys: [{ cols: ['u-42', '7'] }, { cols: ['u-42', '9'] }],
    });
    sameValue(Query.encode(query).finish(), wire);
  });

  it('retrieve.Result: rows 4 with Row.keys 1 / Row.columns 2, Feature.column_idx 2', () => {
    const w = new BinaryWriter();
    str(w, 1, 'catalog');
    str(w, 2, 'catalog_id');
    message(w, 3, (s) => {
      str(s, 1, 'stats');
      message(s, 2, (f) => str(f, 1, 'price'));
      message(s, 2, (f) => str(f, 1, 'ctr_7d').tag(2, WireType.Varint).int32(1));
    });
    message(w, 4, (r) => bytes(bytes(str(r, 1, '101'), 2, f32le(9.5)), 2, f32le(0.125)));
    const wire = w.finish();

    const result = Result.decode(wire);
    assert.equal(result.entityLabel, 'catalog');
    sameValue(result.keysSchema, ['catalog_id']);
    sameValue(result.featureSchemas[0]?.features, [
      { label: 'price', columnIdx: 0 },
      { label: 'ctr_7d', columnIdx: 1 },
    ]);
    sameValue(result.rows, [{ keys: ['101'], columns: [f32le(9.5), f32le(0.125)] }]);
    sameValue(Result.encode(result).finish(), wire);
  });

  it('inference.ModelInferRequest: tensors 5/6, parameters map 4, raw_input_contents 7', () => {
    const raw = f32le(1, 2, 3, 4);
    const w = new BinaryWriter();
    str(w, 1, 'ctr');
    str(w, 2, '1');
    str(w, 3, 'req-7');
    message(w, 4, (e) => message(str(e, 1, 'sequence_id'), 2, (p) => p.tag(2, WireType.Varint).int64(42n)));
    message(w, 5, (t) => {
      str(t, 1, 'features');
      str(t, 2, 'FP32');
      message(t, 3, (shape) => shape.int64(1n).int64(4n)); // packed repeated int64
    });
    message(w, 6, (o) => str(o, 1, 'score'));
    bytes(w, 7, raw);
    const wire = w.finish();

    const request = ModelInferRequest.decode(wire);
    sameValue(
      request,
      ModelInferRequest.fromPartial({
        modelName: 'ctr',
        modelVersion: '1',
        id: 'req-7',
        parameters: { sequence_id: { int64Param: 42n } },
        inputs: [{ name: 'features', datatype: 'FP32', shape: [1n, 4n] }],
        outputs: [{ name: 'score' }],
        rawInputContents: [raw],
      }),
    );
    sameValue(ModelInferRequest.encode(request).finish(), wire);
  });

  it('inference: raw_output_contents 6, fp32_contents 6, InferParameter double 4 / uint64 5', () => {
    const w = new BinaryWriter();
    str(w, 1, 'ctr');
    message(w, 5, (t) => {
      str(str(t, 1, 'score'), 2, 'FP32');
      message(t, 3, (shape) => shape.int64(2n));
      message(t, 5, (c) => message(c, 6, (fp32) => fp32.float(0.25).float(0.75)));
    });
    bytes(w, 6, f32le(0.25, 0.75));
    const response = ModelInferResponse.decode(w.finish());
    sameValue(response.outputs[0]?.contents?.fp32Contents, [0.25, 0.75]);
    sameValue(response.outputs[0]?.shape, [2n]);
    sameValue(response.rawOutputContents, [f32le(0.25, 0.75)]);

    const double = new BinaryWriter().tag(4, WireType.Bit64).double(0.5).finish();
    sameValue(InferParameter.decode(double), InferParameter.fromPartial({ doubleParam: 0.5 }));
    const uint64 = new BinaryWriter()
      .tag(5, WireType.Varint)
      .uint64(2n ** 64n - 1n)
      .finish();
    assert.equal(InferParameter.decode(uint64).uint64Param, 2n ** 64n - 1n);

    const metadata = new BinaryWriter();
    message(str(metadata, 1, 'ctr'), 4, (t) =>
      message(str(str(t, 1, 'features'), 2, 'FP32'), 3, (s) => s.int64(-1n)),
    );
    sameValue(ModelMetadataResponse.decode(metadata.finish()).inputs, [
      { name: 'features', datatype: 'FP32', shape: [-1n] },
    ]);
  });

  it('numerix: EntityScoreData schema 1, entity_scores 2, compute_id 3, optional data_type 4', () => {
    const w = new BinaryWriter();
    message(w, 1, (d) => {
      str(str(d, 1, 'catalog_id'), 1, 'ctr');
      message(d, 2, (score) =>
        message(score, 2, (list) => bytes(bytes(list, 1, Buffer.from('c1')), 1, f32le(0.5))),
      );
      message(d, 2, (score) => message(score, 1, (list) => str(str(list, 1, 'c2'), 1, '0.25')));
      str(d, 3, 'blend');
      str(d, 4, 'fp32');
    });
    const wire = w.finish();

    const request = NumerixRequestProto.decode(wire);
    sameValue(
      request,
      NumerixRequestProto.fromPartial({
        entityScoreData: {
          schema: ['catalog_id', 'ctr'],
          entityScores: [
            { byteData: { values: [Buffer.from('c1'), f32le(0.5)] } },
            { stringData: { values: ['c2', '0.25'] } },
          ],
          computeId: 'blend',
          dataType: 'fp32',
        },
      }),
    );
    sameValue(NumerixRequestProto.encode(request).finish(), wire);

    // data_type has presence: absent and empty are different on the wire and after decoding.
    assert.equal(EntityScoreData.decode(new BinaryWriter().finish()).dataType, undefined);
    const empty = EntityScoreData.encode(EntityScoreData.fromPartial({ dataType: '' })).finish();
    sameValue(empty, new BinaryWriter().tag(4, WireType.LengthDelimited).string('').finish());
    assert.equal(EntityScoreData.decode(empty).dataType, '');
  });

  it('numerix.NumerixResponseProto: computation_score_data 1 / error 2 (Error.message 1)', () => {
    const error = message(new BinaryWriter(), 2, (e) => str(e, 1, 'No expression configured')).finish();
    sameValue(NumerixResponseProto.decode(error), {
      computationScoreData: undefined,
      error: { message: 'No expression configured' },
    });

    const scores = message(new BinaryWriter(), 1, (d) => {
      str(str(d, 1, 'catalog_id'), 1, 'score');
      message(d, 2, (score) => message(score, 1, (list) => str(str(list, 1, 'c1'), 1, '0.5')));
    }).finish();
    sameValue(NumerixResponseProto.decode(scores).computationScoreData, {
      schema: ['catalog_id', 'score'],
      computationScores: [{ stringData: { values: ['c1', '0.5'] }, byteData: undefined }],
    });
  });

  it('orchestrator.v1 legacy API keeps the original entity API numbers', () => {
    const w = new BinaryWriter();
    message(w, 1, (e) => {
      str(e, 1, 'catalog_id');
      str(str(e, 2, '1'), 2, '2');
      message(e, 3, (f) => str(str(str(f, 1, 'price'), 2, '9.5'), 2, '3.25'));
    });
    str(w, 2, 'catalog_ranker');
    str(w, 3, 'trk-3');
    const wire = w.finish();
    const request = OrchestratorRequestProto.decode(wire);
    sameValue(request, {
      entities: [
        {
          entity: 'catalog_id',
          ids: ['1', '2'],
          features: [{ name: 'price', idsFeatureValue: ['9.5', '3.25'] }],
        },
      ],
      modelConfigId: 'catalog_ranker',
      trackingId: 'trk-3',
    });
    sameValue(OrchestratorRequestProto.encode(request).finish(), wire);

    const response = new BinaryWriter();
    message(response, 1, (row) => str(str(row, 1, 'catalog_id'), 1, 'ctr'));
    message(response, 2, (e) => str(e, 1, 'unknown model'));
    // Field 60 (served_model_config_id) is new: an original client skips it, and without it the
    // answer decodes as before.
    sameValue(OrchestratorResponseProto.decode(response.finish()), {
      componentData: [{ data: ['catalog_id', 'ctr'] }],
      error: { message: 'unknown model' },
      servedModelConfigId: '',
    });
    const served = new BinaryWriter();
    str(served, 60, 'catalog_ranker_v2');
    sameValue(OrchestratorResponseProto.decode(served.finish()).servedModelConfigId, 'catalog_ranker_v2');
  });

  it('orchestrator.v1.ContextFeature shares numbers 1-3 with FeatureSchema', () => {
    const feature = ContextFeature.fromPartial({
      name: 'user_vec',
      dataType: DataType.DATA_TYPE_FP16_VECTOR,
      vectorDim: 3,
      value: Buffer.alloc(6),
    });
    sameValue(FeatureSchema.decode(ContextFeature.encode(feature).finish()), {
      name: 'user_vec',
      dataType: DataType.DATA_TYPE_FP16_VECTOR,
      vectorDim: 3,
    });
  });
});

// orchestrator.md: DataType names and numbers, shared with the feature store protocol.
const dataTypeDesign = [
  'UNSPECIFIED',
  'FP8E5M2',
  'FP8E4M3',
  'FP16',
  'FP32',
  'FP64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'STRING',
  'BOOL',
  'FP8E5M2_VECTOR',
  'FP8E4M3_VECTOR',
  'FP16_VECTOR',
  'FP32_VECTOR',
  'FP64_VECTOR',
  'INT8_VECTOR',
  'INT16_VECTOR',
  'INT32_VECTOR',
  'INT64_VECTOR',
  'UINT8_VECTOR',
  'UINT16_VECTOR',
  'UINT32_VECTOR',
  'UINT64_VECTOR',
  'STRING_VECTOR',
  'BOOL_VECTOR',
].map((name, number) => [`DATA_TYPE_${name}`, number]);

describe('orchestrator.v1.DataType', () => {
  it('has exactly the values 0..30 of the design', () => {
    const generated = Object.entries(DataType).filter(
      (entry): entry is [string, number] => typeof entry[1] === 'number',
    );
    sameValue(generated, dataTypeDesign);
  });

  it('travels as its number on the wire', () => {
    const wire = new BinaryWriter().tag(2, WireType.Varint).int32(30).finish();
    assert.equal(FeatureSchema.decode(wire).dataType, DataType.DATA_TYPE_BOOL_VECTOR);
  });
});

describe('proto-loader (server reflection)', () => {
  const files = protoFiles();

  it('loads every .proto file with the same services and paths as the generated code', () => {
    assert.ok(files.length >= 8, `found ${files.join(', ')}`);
    const definition: PackageDefinition = loadSync(files, { includeDirs: [protoDir] });
    const generated: Record<string, Record<string, { path: string }>> = {
      'orchestrator.v1.Predict': PredictService,
      'orchestrator.v1.Orchestrator': OrchestratorService,
      'vss.v1.SimilaritySearch': SimilaritySearchService,
      'retrieve.FeatureService': FeatureServiceService,
      'inference.GRPCInferenceService': GRPCInferenceServiceService,
      'numerix.Numerix': NumerixService,
    };
    for (const [name, service] of Object.entries(generated)) {
      const loaded = definition[name] as ServiceDefinition | undefined;
      assert.ok(loaded, `${name} is loaded`);
      const loadedPaths = Object.values(loaded).map((method) => method.path);
      const generatedPaths = Object.values(service).map((method) => method.path);
      sameValue(loadedPaths.sort(), generatedPaths.sort(), name);
    }

    const dataType = definition['orchestrator.v1.DataType'] as EnumTypeDefinition;
    const values = (dataType.type as { value: { name: string; number: number }[] }).value;
    sameValue(
      values.map(({ name, number }) => [name, number]),
      dataTypeDesign,
    );

    // The reflection service indexes every file and symbol at construction.
    assert.doesNotThrow(() => new ReflectionService(definition));
  });
});

describe('loopback gRPC with a generated service', () => {
  it('serves numerix.Numerix/Compute and calls it with the generated client', async () => {
    const numerix: NumerixServer = {
      compute(call, callback) {
        const data = call.request.entityScoreData;
        if (data?.computeId !== 'sum') {
          callback(null, {
            error: { message: `No expression configured for compute_id: ${data?.computeId}` },
          });
          return;
        }
        const computationScores = data.entityScores.map((row) => {
          const [id = '', ...columns] = row.stringData?.values ?? [];
          const sum = columns.reduce((total, value) => total + Number(value), 0);
          return { stringData: { values: [id, String(sum)] } };
        });
        callback(null, {
          computationScoreData: { schema: [data.schema[0] ?? '', 'score'], computationScores },
        });
      },
    };
    const server = new Server();
    server.addService(NumerixService, numerix);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
    const client = new NumerixClient(`127.0.0.1:${port}`, credentials.createInsecure());
    const compute = (request: NumerixRequestProto) =>
      new Promise<NumerixResponseProto>((resolve, reject) =>
        client.compute(request, new Metadata(), { deadline: Date.now() + 5000 }, (err, response) =>
          err ? reject(err) : resolve(response),
        ),
      );
    try {
      const scored = await compute(
        NumerixRequestProto.fromPartial({
          entityScoreData: {
            schema: ['catalog_id', 'ctr', 'bonus'],
            entityScores: [
              { stringData: { values: ['c1', '0.5', '0.25'] } },
              { stringData: { values: ['c2', '1', '2'] } },
            ],
            computeId: 'sum',
          },
        }),
      );
      sameValue(scored.computationScoreData?.schema, ['catalog_id', 'score']);
      sameValue(
        scored.computationScoreData?.computationScores.map((row) => row.stringData?.values),
        [
          ['c1', '0.75'],
          ['c2', '3'],
        ],
      );
      const failed = await compute(
        NumerixRequestProto.fromPartial({ entityScoreData: { computeId: 'nope' } }),
      );
      sameValue(failed.error, { message: 'No expression configured for compute_id: nope' });
    } finally {
      client.close();
      await new Promise<void>((resolve, reject) =>
        server.tryShutdown((err) => (err ? reject(err) : resolve())),
      );
    }
  });
});
