/**
 * A TypeScript client for the orchestrator: builds typed requests from plain values (numbers,
 * strings, booleans, bigints, arrays, typed arrays) and decodes typed responses, so a caller never
 * packs bytes by hand.
 *
 *   const client = new OrchestratorClient('127.0.0.1:50051');
 *   const { targets } = await client.pointWise({
 *     modelConfigId: 'catalog_ranker',
 *     context: { user_id: 'u1' },
 *     targets: [{ id: 'c1' }, { id: 'c2', features: { price: 12.5 } }],
 *     schema: { price: 'FP32' },
 *   });
 *   targets[0].values.final_score; // a number
 *
 * With `timings: true` in the input the result also holds `timings`, the orchestrator's per-component
 * timings of that request (docs/orchestrator.md, "Per-request timings").
 *
 * Over TLS: `new OrchestratorClient('https://orchestrator.internal:50051')` trusts the system's roots;
 * `{ tls: { ca: readFileSync('ca.pem'), cert, key } }` trusts a private CA and presents a client
 * certificate (with a bare `host:port` too).
 */
import type { Metadata, ServiceError, StatusObject } from '@grpc/grpc-js';
import { type DecodedValue, decodeValue, type EncodableValue, encodeValue } from '../datatypes/codecs.js';
import { DataType, dataTypeInfo, parseDataType } from '../datatypes/data-type.js';
import { OrchestratorClient as LegacyGrpcClient } from '../gen/orchestrator/v1/orchestrator.js';
import {
  PredictClient,
  type PredictRequest,
  type PredictResponse,
  type Score,
} from '../gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../gen/orchestrator/v1/types.js';
import { LatticeError } from '../platform/errors.js';
import { type ClientOptions, dialClient } from '../platform/grpc/client-options.js';
import { type RequestTimings, TIMINGS_KEY, timingsOf } from './wire/timings-trailer.js';

export type { ClientOptions, ClientTlsOptions } from '../platform/grpc/client-options.js';
export type { ComponentTimingJson, RequestTimings } from './wire/timings-trailer.js';
/** The timings of a failed call that asked for them: `timingsOf(error.metadata)`. */
export { timingsOf };

/** A plain value, or one with its type spelled out (`{ type: 'FP16', value: 0.5 }`). */
export type PlainValue = EncodableValue | { type: string; value: EncodableValue; vectorDim?: number };

export interface TargetInput {
  id: string;
  features?: Record<string, PlainValue>;
}

export interface PredictInput {
  modelConfigId: string;
  trackingId?: string;
  /** Features shared by every target. */
  context?: Record<string, PlainValue>;
  /** Omitted (or empty) for a config that retrieves its targets (its `retrieval` stage). */
  targets?: readonly TargetInput[];
  /** Types for feature names whose plain values should not use the inferred type (e.g. `{ price: 'FP32' }`). */
  schema?: Record<string, string>;
  /** Milliseconds the call may take; default 1000. */
  deadlineMs?: number;
  /** Ask the orchestrator for per-component timings (the result's `timings`). */
  timings?: boolean;
}

export interface PairInput extends PredictInput {
  pairs: readonly { first: number; second: number; features?: Record<string, PlainValue> }[];
  returnTargetScores?: boolean;
}

export interface SlateInput extends PredictInput {
  slates: readonly { targets: readonly number[]; features?: Record<string, PlainValue> }[];
  returnTargetScores?: boolean;
}

export interface ScoredRow {
  values: Record<string, DecodedValue>;
  /** Empty when the row was scored cleanly; otherwise which components failed for it. */
  error: string;
}

export interface PredictResult {
  trackingId: string;
  /** The config that served the request: the one named, or the arm of its sticky A/B split. */
  servedModelConfigId: string;
  /** Per target (point-wise always; pair/slate when asked for), each with its id. */
  targets: (ScoredRow & { id: string })[];
  pairs: ScoredRow[];
  slates: ScoredRow[];
  /** What failed without failing the call, e.g. `retriever <name>: <reason>` (PredictResponse.errors). */
  errors: string[];
  /** Per component: kind, start, duration and state, and the total; only when the input asked. */
  timings?: RequestTimings;
}

interface Typed {
  type: DataType;
  vectorDim: number;
  value: EncodableValue;
}

/** The type a plain value gets when the schema does not say: numbers are FP64 (exact), arrays are vectors of their elements' type. */
function inferType(value: EncodableValue): DataType {
  if (typeof value === 'string') return DataType.STRING;
  if (typeof value === 'boolean') return DataType.BOOL;
  if (typeof value === 'bigint') return DataType.INT64;
  if (typeof value === 'number') return DataType.FP64;
  if (value instanceof Float32Array) return DataType.FP32_VECTOR;
  if (value instanceof Float64Array) return DataType.FP64_VECTOR;
  if (value instanceof Int32Array) return DataType.INT32_VECTOR;
  if (value instanceof BigInt64Array) return DataType.INT64_VECTOR;
  if (Array.isArray(value)) {
    const first = value[0];
    if (first === undefined) return DataType.FP64_VECTOR;
    return dataTypeInfo(inferType(first as EncodableValue)).vector;
  }
  throw new LatticeError(
    'INVALID_ARGUMENT',
    `cannot infer a data type for ${String(value)}; give { type, value }`,
  );
}

function typed(name: string, value: PlainValue, schema: Record<string, string> | undefined): Typed {
  if (
    typeof value === 'object' &&
    value !== null &&
    'type' in value &&
    'value' in value &&
    !ArrayBuffer.isView(value)
  ) {
    const type = parseDataType(value.type, name);
    return { type, value: value.value, vectorDim: value.vectorDim ?? vectorLength(type, value.value) };
  }
  const plain = value as EncodableValue;
  const declared = schema?.[name];
  const type = declared ? parseDataType(declared, `schema.${name}`) : inferType(plain);
  return { type, value: plain, vectorDim: vectorLength(type, plain) };
}

function vectorLength(type: DataType, value: EncodableValue): number {
  if (!dataTypeInfo(type).isVector) return 0;
  return Array.isArray(value) || ArrayBuffer.isView(value) ? (value as ArrayLike<unknown>).length : 0;
}

function encode(t: Typed, field: string): Buffer {
  return Buffer.from(encodeValue(t.type, t.value, t.vectorDim, field));
}

/** Builds a schema and aligned per-row values from rows of named plain values; every row must give every name. */
function rowsOf(
  rows: readonly (Record<string, PlainValue> | undefined)[],
  schema: Record<string, string> | undefined,
  field: string,
): { schema: FeatureSchema[]; values: Buffer[][] } {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r ?? {})))];
  const types = new Map<string, Typed>();
  const values = rows.map((row, i) =>
    names.map((name) => {
      const value = row?.[name];
      if (value === undefined)
        throw new LatticeError('INVALID_ARGUMENT', `${field}[${i}] has no value for "${name}"`, {
          field: `${field}[${i}]`,
        });
      const t = typed(name, value, schema);
      const first = types.get(name);
      if (!first) types.set(name, t);
      else if (first.type !== t.type)
        throw new LatticeError(
          'INVALID_ARGUMENT',
          `${field}[${i}].${name} is ${DataType[t.type]} but earlier rows are ${DataType[first.type]}`,
        );
      return encode(t, `${field}[${i}].${name}`);
    }),
  );
  return {
    schema: names.map((name) => ({
      name,
      dataType: types.get(name)!.type as number,
      vectorDim: types.get(name)!.vectorDim,
    })),
    values,
  };
}

/**
 * A pair's or slate's index into the request's targets, checked before the request is built: the
 * encoder cannot write anything but an int32 and would fail as INTERNAL "serialization failure".
 */
function targetIndex(value: unknown, targets: number, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value >= targets) {
    const shown = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `${field} is ${shown}: it must be the index of one of the ${targets} targets (an integer from 0 to ${targets - 1})`,
      { field },
    );
  }
  return value;
}

/** Each entry of a request's `pairs` or `slates` must be an object. */
function rowObject<T>(value: T, field: string): NonNullable<T> {
  if (typeof value !== 'object' || value === null) {
    throw new LatticeError('INVALID_ARGUMENT', `${field} is ${String(value)}: it must be an object`, {
      field,
    });
  }
  return value as NonNullable<T>;
}

function decodeRows(schema: readonly FeatureSchema[], scores: readonly Score[]): ScoredRow[] {
  return scores.map((score) => ({
    values: Object.fromEntries(
      schema.map((s, i) => [
        s.name,
        decodeValue(
          s.dataType as number as DataType,
          score.outputValues[i] ?? new Uint8Array(0),
          s.vectorDim,
          s.name,
        ),
      ]),
    ),
    error: score.error,
  }));
}

/**
 * One call; its answer with the trailers, which grpc-js hands over in the call's `status` event
 * (emitted after the callback).
 */
function unary<Req, Res>(
  call: (
    request: Req,
    metadata: Metadata,
    options: { deadline: number },
    callback: (error: ServiceError | null, response: Res) => void,
  ) => { on(event: 'status', listener: (status: StatusObject) => void): unknown },
  request: Req,
  metadata: Metadata,
  deadlineMs: number,
): Promise<{ response: Res; trailers: Metadata }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    let response: Res | undefined;
    let trailers: Metadata | undefined;
    const settle = () => {
      if (answered && trailers !== undefined) resolve({ response: response!, trailers });
    };
    const started = call(request, metadata, { deadline: Date.now() + deadlineMs }, (error, value) => {
      if (error) {
        reject(error);
        return;
      }
      answered = true;
      response = value;
      settle();
    });
    started.on('status', (status) => {
      trailers = status.metadata;
      settle();
    });
  });
}

export class OrchestratorClient {
  private readonly predict: PredictClient;
  private readonly legacy: LegacyGrpcClient;
  private readonly metadata: Metadata;

  /**
   * `address` is `host:port` (plaintext unless `tls` is given) or `https://host:port` /
   * `http://host:port`; `options` as for every Lattice client (ClientOptions: caller id and token, TLS).
   */
  constructor(address: string, options: ClientOptions = {}) {
    const { target, credentials, metadata } = dialClient(address, options);
    this.predict = new PredictClient(target, credentials);
    this.legacy = new LegacyGrpcClient(target, credentials);
    this.metadata = metadata;
  }

  private request(input: PredictInput): PredictRequest {
    const context = Object.entries(input.context ?? {}).map(([name, value]) => {
      const t = typed(name, value, input.schema);
      return {
        name,
        dataType: t.type as number,
        vectorDim: t.vectorDim,
        value: encode(t, `context.${name}`),
      };
    });
    const targets = rowsOf(
      (input.targets ?? []).map((t) => t.features),
      input.schema,
      'targets',
    );
    return {
      modelConfigId: input.modelConfigId,
      trackingId: input.trackingId ?? '',
      contextFeatures: context,
      targetInputSchema: targets.schema,
      targets: (input.targets ?? []).map((t, i) => ({ id: t.id, featureValues: targets.values[i]! })),
      pairInputSchema: [],
      pairs: [],
      slateInputSchema: [],
      slates: [],
      returnTargetScores: false,
    };
  }

  /** The client's metadata, asking for timings when `timings` is set. */
  private metadataFor(timings: boolean | undefined): Metadata {
    if (timings !== true) return this.metadata;
    const metadata = this.metadata.clone();
    metadata.set(TIMINGS_KEY, '1');
    return metadata;
  }

  private result(
    input: PredictInput,
    { response, trailers }: { response: PredictResponse; trailers: Metadata },
  ): PredictResult {
    const timings = input.timings === true ? timingsOf(trailers) : undefined;
    return {
      trackingId: response.trackingId,
      servedModelConfigId: response.servedModelConfigId,
      targets: decodeRows(response.targetOutputSchema, response.targetScores).map((row, i) => ({
        ...row,
        // Rows the config retrieved, sorted or cut come with their ids; others are the request's, in order.
        id: response.targetIds[i] ?? input.targets?.[i]?.id ?? '',
      })),
      pairs: decodeRows(response.pairOutputSchema, response.pairScores),
      slates: decodeRows(response.slateOutputSchema, response.slateScores),
      errors: response.errors,
      ...(timings === undefined ? {} : { timings }),
    };
  }

  async pointWise(input: PredictInput): Promise<PredictResult> {
    const response = await unary(
      this.predict.inferPointWise.bind(this.predict),
      this.request(input),
      this.metadataFor(input.timings),
      input.deadlineMs ?? 1000,
    );
    return this.result(input, response);
  }

  async pairWise(input: PairInput): Promise<PredictResult> {
    const request = this.request(input);
    const count = input.targets?.length ?? 0;
    const checked = input.pairs.map((p, i) => {
      const pair = rowObject(p, `pairs[${i}]`);
      return {
        first: targetIndex(pair.first, count, `pairs[${i}].first`),
        second: targetIndex(pair.second, count, `pairs[${i}].second`),
        features: pair.features,
      };
    });
    const pairs = rowsOf(
      checked.map((p) => p.features),
      input.schema,
      'pairs',
    );
    request.pairInputSchema = pairs.schema;
    request.pairs = checked.map((p, i) => ({
      firstTargetIndex: p.first,
      secondTargetIndex: p.second,
      featureValues: pairs.values[i]!,
    }));
    request.returnTargetScores = input.returnTargetScores ?? false;
    const response = await unary(
      this.predict.inferPairWise.bind(this.predict),
      request,
      this.metadataFor(input.timings),
      input.deadlineMs ?? 1000,
    );
    return this.result(input, response);
  }

  async slateWise(input: SlateInput): Promise<PredictResult> {
    const request = this.request(input);
    const count = input.targets?.length ?? 0;
    const checked = input.slates.map((s, i) => {
      const slate = rowObject(s, `slates[${i}]`);
      if (!Array.isArray(slate.targets)) {
        throw new LatticeError('INVALID_ARGUMENT', `slates[${i}].targets must be a list of target indexes`, {
          field: `slates[${i}].targets`,
        });
      }
      return {
        targets: slate.targets.map((t, j) => targetIndex(t, count, `slates[${i}].targets[${j}]`)),
        features: slate.features,
      };
    });
    const slates = rowsOf(
      checked.map((s) => s.features),
      input.schema,
      'slates',
    );
    request.slateInputSchema = slates.schema;
    request.slates = checked.map((s, i) => ({
      slateTargetIndices: s.targets,
      featureValues: slates.values[i]!,
    }));
    request.returnTargetScores = input.returnTargetScores ?? false;
    const response = await unary(
      this.predict.inferSlateWise.bind(this.predict),
      request,
      this.metadataFor(input.timings),
      input.deadlineMs ?? 1000,
    );
    return this.result(input, response);
  }

  /** The legacy entity API: rows as objects keyed by the header row's column names (values are text). */
  async retrieveModelScore(input: {
    modelConfigId: string;
    trackingId?: string;
    entities: readonly {
      entity: string;
      ids: readonly string[];
      features?: Record<string, readonly string[]>;
    }[];
    deadlineMs?: number;
    /** Ask for per-component timings (the result's `timings`). */
    timings?: boolean;
  }): Promise<{
    rows: Record<string, string>[];
    error: string;
    /** The config that served the request: the one named, or the arm of its sticky A/B split. */
    servedModelConfigId: string;
    timings?: RequestTimings;
  }> {
    const { response, trailers } = await unary(
      this.legacy.retrieveModelScore.bind(this.legacy),
      {
        modelConfigId: input.modelConfigId,
        trackingId: input.trackingId ?? '',
        entities: input.entities.map((e) => ({
          entity: e.entity,
          ids: [...e.ids],
          features: Object.entries(e.features ?? {}).map(([name, values]) => ({
            name,
            idsFeatureValue: [...values],
          })),
        })),
      },
      this.metadataFor(input.timings),
      input.deadlineMs ?? 1000,
    );
    const timings = input.timings === true ? timingsOf(trailers) : undefined;
    const [header, ...rows] = response.componentData;
    const names = header?.data ?? [];
    return {
      rows: rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r.data[i] ?? '']))),
      error: response.error?.message ?? '',
      servedModelConfigId: response.servedModelConfigId,
      ...(timings === undefined ? {} : { timings }),
    };
  }

  close(): void {
    this.predict.close();
    this.legacy.close();
  }
}
