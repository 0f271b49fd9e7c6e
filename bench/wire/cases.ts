/**
 * One case per hand-written protobuf file: the file's code and the generated code (src/gen, with
 * @bufbuild/protobuf's reader and writer) doing the same work on the same production-shaped input
 * (test/support/wire-messages.ts, seeded). Where a file exists to give the event loop back (`turns`),
 * the longest turn counts as well as the throughput.
 */
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import { NumerixResponseProto } from '../../src/gen/numerix/numerix.js';
import {
  Entity,
  OrchestratorRequestProto,
  OrchestratorResponseProto,
} from '../../src/gen/orchestrator/v1/orchestrator.js';
import { PredictRequest, PredictResponse, Target } from '../../src/gen/orchestrator/v1/predict.js';
import { FeatureSchema } from '../../src/gen/orchestrator/v1/types.js';
import { SearchRequest } from '../../src/gen/vss/v1/vss.js';
import { overLimit, REQUEST_LIMITS } from '../../src/orchestrator/engine/request-limits.js';
import { featureSchemaSize, writeFeatureSchema } from '../../src/orchestrator/wire/feature-schema.js';
import {
  encodeLegacyAnswerInSlices,
  encodeLegacyResponseInSlices,
} from '../../src/orchestrator/wire/legacy-response-codec.js';
import { encodeLogRows } from '../../src/orchestrator/wire/log-rows-encoder.js';
import { encodeComputeRequest, readComputeScores } from '../../src/orchestrator/wire/numerix-compute.js';
import {
  encodePredictAnswer,
  toPredictResponse,
} from '../../src/orchestrator/wire/predict-response-codec.js';
import { decodeLegacyInSlices, decodePredictColumns } from '../../src/orchestrator/wire/request-decoding.js';
import { precheckPredict } from '../../src/orchestrator/wire/request-precheck.js';
import { eachField, LEN } from '../../src/platform/protobuf/field-scan.js';
import { decodeInSlices } from '../../src/platform/protobuf/sliced-decode.js';
import { fieldSize, writeStringField, writeVarint } from '../../src/platform/protobuf/wire.js';
import { SEARCH_LIMITS } from '../../src/vss/serving/request-limits.js';
import { precheckSearch } from '../../src/vss/wire/request-precheck.js';
import {
  generatedComputeRequest,
  generatedLegacyResponse,
  generatedLogRows,
} from '../../test/support/generated-references.js';
import { WireMessages } from '../../test/support/wire-messages.js';

export interface WireCase {
  /** The hand-written file, under src/. */
  file: string;
  what: string;
  hand: () => unknown;
  generated: () => unknown;
  /** The file slices its work: its longest event-loop turn is measured too. */
  turns?: boolean;
}

const call = { signal: new AbortController().signal, deadline: Number.POSITIVE_INFINITY };
const m = new WireMessages(37, false);

/** Throws like a pre-check past a limit: both sides of a rejection case stop the same way. */
class Rejected extends Error {}
const rejects = (run: () => void) => () => {
  try {
    run();
  } catch (err) {
    if (err instanceof Rejected || (err as { code?: string }).code === 'INVALID_ARGUMENT') return;
    throw err;
  }
  throw new Error('not rejected');
};

// wire.ts: 64 string fields and 64 varint fields.
const texts = Array.from({ length: 64 }, () => m.text(16));
const numbers = Array.from({ length: 64 }, () => m.int(100_000));

// feature-schema.ts: a response's 16 schema entries.
const schemas = Array.from({ length: 16 }, () => m.featureSchema());

// predict-response-codec.ts and the legacy answer: 1,000 rows.
const answer = m.predictAnswer(1000, 3);
const legacyTable = m.legacyTable(5000, 3);

// sliced-encode.ts: a 50,000-row legacy response (answers past 4,096 rows are sliced).
const legacyResponse = {
  componentData: Array.from({ length: 50_000 }, () => ({ data: [m.text(), m.text(), m.text()] })),
  error: { message: '' },
  servedModelConfigId: 'catalog_ranker',
};

// log-rows-encoder.ts: one logged request of 100 targets.
const logTable = m.logTable(100, 4);
// numerix-compute.ts: 1,000 rows of 3 FP32 values, and their scores back.
const compute = m.computeRequest(1000, 3);
const sent = encodeComputeRequest(compute);
const scoreBytes = m.floats(1000);
const computeResponse = NumerixResponseProto.encode({
  computationScoreData: {
    schema: ['id', 'score'],
    computationScores: compute.ids.map((id, r) => ({
      byteData: { values: [Buffer.from(id), scoreBytes.subarray(r * 4, r * 4 + 4)] },
    })),
  },
}).finish();
function generatedScores(): Float64Array {
  const scores = NumerixResponseProto.decode(computeResponse).computationScoreData!.computationScores;
  const out = new Float64Array(scores.length);
  for (let r = 0; r < scores.length; r++) {
    const [id, value] = scores[r]!.byteData!.values;
    if (Buffer.compare(id!, Buffer.from(compute.ids[r]!)) !== 0) throw new Error('rows out of order');
    out[r] = new DataView(value!.buffer, value!.byteOffset, 4).getFloat32(0, true);
  }
  return out;
}

// request-columns.ts, sliced-decode.ts, field-scan.ts: a Predict request of 5,000 targets × 3 values.
const predictBytes = PredictRequest.encode(m.predictRequest(5000, 3)).finish();
const bigPredictBytes = PredictRequest.encode(m.predictRequest(20_000, 3)).finish();

// entity-decoding.ts: a legacy request of one entity of 100,000 ids (the limit).
const legacyBytes = OrchestratorRequestProto.encode(m.legacyRequest(100_000)).finish();

// request-precheck.ts: past the value limit (100,000 targets × 3 values > 250,000).
const overValues = Buffer.from(
  PredictRequest.encode({
    ...m.predictRequest(0, 3),
    targets: Array.from({ length: 100_000 }, (_, i) => ({
      id: `t${i}`,
      featureValues: [new Uint8Array(4), new Uint8Array(4), new Uint8Array(4)],
    })),
  }).finish(),
);
// vss request-precheck.ts: past the filter value limit.
const overFilter = Buffer.from(
  SearchRequest.encode({
    entity: 'catalog',
    modelName: 'products',
    variant: '',
    queries: [{ candidateId: 'c1', pageToken: '', filters: [] }],
    pageSize: 10,
    searchWidth: 0,
    attributes: [],
    filters: [
      {
        field: 'brand',
        op: 1,
        values: Array.from({ length: SEARCH_LIMITS.filterValues + 1 }, (_, i) => `b${i}`),
      },
    ],
  }).finish(),
);

/** A reader walk of every top-level field and, in each target, its fields: what eachField does with the generated runtime. */
function readerWalk(bytes: Uint8Array): number {
  let seen = 0;
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    seen++;
    if (field === 5 && wireType === 2) {
      const inner = new BinaryReader(reader.bytes());
      while (inner.pos < inner.len) {
        const [, t] = inner.tag();
        inner.skip(t);
        seen++;
      }
    } else reader.skip(wireType);
  }
  return seen;
}

export const CASES: WireCase[] = [
  {
    file: 'platform/protobuf/wire.ts',
    what: '64 string + 64 varint fields vs BinaryWriter',
    hand: () => {
      let size = 0;
      for (const t of texts) size += fieldSize(Buffer.byteLength(t));
      for (const n of numbers) size += 1 + (n < 0x80 ? 1 : n < 0x4000 ? 2 : 3);
      const out = Buffer.allocUnsafe(size);
      let at = 0;
      for (const t of texts) at = writeStringField(out, at, 0x0a, t);
      for (const n of numbers) {
        out[at++] = 0x10;
        at = writeVarint(out, at, n);
      }
      return out;
    },
    generated: () => {
      const w = new BinaryWriter();
      for (const t of texts) w.uint32(0x0a).string(t);
      for (const n of numbers) w.uint32(0x10).uint32(n);
      return w.finish();
    },
  },
  {
    file: 'platform/protobuf/field-scan.ts',
    what: 'walk 5,000 targets’ fields vs BinaryReader tag/skip',
    hand: () => {
      let seen = 0;
      eachField(predictBytes, 0, predictBytes.length, (field, type, from, to) => {
        seen++;
        if (field === 5 && type === LEN) eachField(predictBytes, from, to, () => seen++);
      });
      return seen;
    },
    generated: () => readerWalk(predictBytes),
  },
  {
    file: 'platform/protobuf/sliced-decode.ts',
    what: '20,000 targets, elements by Target.decode vs one PredictRequest.decode',
    hand: () =>
      decodeInSlices(bigPredictBytes, {
        decode: (rest) => PredictRequest.decode(rest),
        repeated: [{ field: 5, property: 'targets', decode: (b) => Target.decode(b) }],
        ...call,
      }),
    generated: () => PredictRequest.decode(bigPredictBytes),
    turns: true,
  },
  {
    file: 'platform/protobuf/sliced-encode.ts',
    what: '50,000-row OrchestratorResponseProto vs one encode',
    hand: () => encodeLegacyResponseInSlices(legacyResponse, call.signal, call.deadline),
    generated: () => OrchestratorResponseProto.encode(legacyResponse).finish(),
    turns: true,
  },
  {
    file: 'orchestrator/wire/feature-schema.ts',
    what: '16 schema fields vs FeatureSchema.encode fork/join',
    hand: () => {
      const sizes = schemas.map(featureSchemaSize);
      let total = 0;
      for (const size of sizes) total += fieldSize(size);
      const out = Buffer.allocUnsafe(total);
      let at = 0;
      for (let i = 0; i < schemas.length; i++) {
        out[at++] = 0x12;
        at = writeVarint(out, at, sizes[i]!);
        at = writeFeatureSchema(out, at, schemas[i]!);
      }
      return out;
    },
    generated: () => {
      const w = new BinaryWriter();
      for (const s of schemas) FeatureSchema.encode(s, w.uint32(0x12).fork()).join();
      return w.finish();
    },
  },
  {
    file: 'orchestrator/wire/predict-response-codec.ts',
    what: '1,000 rows × 3 columns vs PredictResponse.encode(objects)',
    hand: () => encodePredictAnswer(answer),
    generated: () => PredictResponse.encode(toPredictResponse(answer)).finish(),
  },
  {
    file: 'orchestrator/wire/legacy-response-codec.ts',
    what: '5,000 rows × 3 texts from the matrix vs ComponentData objects encoded in slices (what serves a large answer without it)',
    hand: () => encodeLegacyAnswerInSlices(legacyTable, call),
    generated: () =>
      encodeLegacyResponseInSlices(generatedLegacyResponse(legacyTable), call.signal, call.deadline),
  },
  {
    file: 'orchestrator/wire/log-rows-encoder.ts',
    what: 'LogRows of 100 rows × 4 columns vs LogRows.encode(objects)',
    hand: () => encodeLogRows(logTable),
    generated: () => generatedLogRows(logTable),
  },
  {
    file: 'orchestrator/wire/numerix-compute.ts',
    what: 'request: 1,000 rows × 3 FP32 vs NumerixRequestProto.encode(objects)',
    hand: () => encodeComputeRequest(compute),
    generated: () => generatedComputeRequest(compute),
  },
  {
    file: 'orchestrator/wire/numerix-compute.ts',
    what: 'response: 1,000 scores vs NumerixResponseProto.decode',
    hand: () => readComputeScores(computeResponse, sent, 'bench'),
    generated: generatedScores,
  },
  {
    file: 'orchestrator/wire/request-columns.ts',
    what: '5,000 targets into columns vs Target.decode per element (both sliced)',
    hand: () => decodePredictColumns(predictBytes, call.signal, call.deadline),
    generated: () =>
      decodeInSlices(predictBytes, {
        decode: (rest) => PredictRequest.decode(rest),
        repeated: [{ field: 5, property: 'targets', decode: (b) => Target.decode(b) }],
        ...call,
      }),
  },
  {
    file: 'orchestrator/wire/entity-decoding.ts',
    what: 'one entity of 100,000 ids in slices vs Entity.decode per entity (both sliced)',
    hand: () => decodeLegacyInSlices(legacyBytes, call.signal, call.deadline),
    generated: () =>
      decodeInSlices(legacyBytes, {
        decode: (rest) => OrchestratorRequestProto.decode(rest),
        repeated: [{ field: 1, property: 'entities', decode: (b) => Entity.decode(b) }],
        ...call,
      }),
    turns: true,
  },
  {
    file: 'orchestrator/wire/request-precheck.ts',
    what: 'refuse 300,000 values (limit 250,000) vs PredictRequest.decode + count',
    hand: rejects(() => precheckPredict(overValues, 'point')),
    generated: rejects(() => {
      const request = PredictRequest.decode(overValues);
      let values = 0;
      for (const t of request.targets) values += t.featureValues.length;
      if (values > REQUEST_LIMITS.values)
        throw overLimit('values', values, 'targets', 'feature values in the request');
    }),
  },
  {
    file: 'vss/wire/request-precheck.ts',
    what: `refuse ${SEARCH_LIMITS.filterValues + 1} filter values vs SearchRequest.decode + count`,
    hand: rejects(() => precheckSearch(overFilter)),
    generated: rejects(() => {
      const request = SearchRequest.decode(overFilter);
      let values = 0;
      for (const f of request.filters) values += f.values.length;
      if (values > SEARCH_LIMITS.filterValues) throw new Rejected();
    }),
  },
];
