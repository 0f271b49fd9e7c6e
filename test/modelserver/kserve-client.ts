/**
 * Test helpers for the model server: a promise wrapper over the generated KServe v2 client,
 * little-endian encoders and decoders for raw tensor contents, and the expected values computed
 * here, independently of onnxruntime, from a model's weights.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import {
  type DeepPartial,
  GRPCInferenceServiceClient,
  ModelInferRequest,
  type ModelInferResponse,
  type ModelMetadataResponse,
} from '../../src/gen/inference/grpc_service.js';

export const tempRepository = (): string => mkdtempSync(join(tmpdir(), 'lattice-models-'));

type Callback<Res> = (err: grpc.ServiceError | null, res: Res) => void;
type Method<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: Callback<Res>,
) => grpc.ClientUnaryCall;

function call<Req, Res>(method: Method<Req, Res>, request: Req, deadlineMs = 10_000): Promise<Res> {
  return new Promise((resolve, reject) => {
    method(request, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) =>
      err ? reject(err) : resolve(res),
    );
  });
}

/** The generated client, one promise per RPC. */
export class KServeClient {
  readonly raw: GRPCInferenceServiceClient;

  constructor(port: number) {
    this.raw = new GRPCInferenceServiceClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  }

  live = async (): Promise<boolean> => (await call(this.raw.serverLive.bind(this.raw), {})).live;
  ready = async (): Promise<boolean> => (await call(this.raw.serverReady.bind(this.raw), {})).ready;
  modelReady = async (name: string, version = ''): Promise<boolean> =>
    (await call(this.raw.modelReady.bind(this.raw), { name, version })).ready;
  serverMetadata = () => call(this.raw.serverMetadata.bind(this.raw), {});
  modelMetadata = (name: string, version = ''): Promise<ModelMetadataResponse> =>
    call(this.raw.modelMetadata.bind(this.raw), { name, version });
  infer = (request: DeepPartial<ModelInferRequest>): Promise<ModelInferResponse> =>
    call(this.raw.modelInfer.bind(this.raw), ModelInferRequest.fromPartial(request));

  close(): void {
    this.raw.close();
  }
}

/** Asserts a rejected call's status code and that its details match `details`. */
export async function assertStatus(
  promise: Promise<unknown>,
  code: grpc.status,
  details: RegExp,
): Promise<void> {
  await assert.rejects(promise, (err: grpc.ServiceError) => {
    assert.equal(
      err.code,
      code,
      `expected ${grpc.status[code]}, got ${grpc.status[err.code]}: ${err.details}`,
    );
    assert.match(err.details, details);
    return true;
  });
}

export const fp32Bytes = (values: ArrayLike<number>): Buffer => Buffer.from(Float32Array.from(values).buffer);
export const int64Bytes = (values: readonly bigint[]): Buffer =>
  Buffer.from(BigInt64Array.from(values).buffer);
export const uint16Bytes = (codes: readonly number[]): Buffer => Buffer.from(Uint16Array.from(codes).buffer);

export function readFp32(bytes: Uint8Array): number[] {
  return Array.from({ length: bytes.byteLength / 4 }, (_, i) => Buffer.from(bytes).readFloatLE(i * 4));
}
export function readInt64(bytes: Uint8Array): bigint[] {
  return Array.from({ length: bytes.byteLength / 8 }, (_, i) => Buffer.from(bytes).readBigInt64LE(i * 8));
}
export function readUint16(bytes: Uint8Array): number[] {
  return Array.from({ length: bytes.byteLength / 2 }, (_, i) => Buffer.from(bytes).readUInt16LE(i * 2));
}

/** BYTES contents: each element as a 4-byte little-endian length, then its bytes. */
export function bytesTensor(strings: readonly string[]): Buffer {
  return Buffer.concat(
    strings.flatMap((s) => {
      const body = Buffer.from(s, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(body.byteLength);
      return [length, body];
    }),
  );
}
export function readBytesTensor(bytes: Uint8Array): string[] {
  const buffer = Buffer.from(bytes);
  const out: string[] = [];
  for (let offset = 0; offset < buffer.byteLength; ) {
    const length = buffer.readUInt32LE(offset);
    out.push(buffer.subarray(offset + 4, offset + 4 + length).toString('utf8'));
    offset += 4 + length;
  }
  return out;
}

/** Row-major `rows × k` features, distinct per `seed` (no PRNG needed: a smooth deterministic pattern). */
export function featureRows(rows: number, k: number, seed: number): Float32Array {
  return Float32Array.from({ length: rows * k }, (_, i) => Math.sin(seed * 7.13 + i * 0.37) * 1.5);
}

const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

/** sigmoid(x·w + b) per row, in double precision from the float32 inputs and weights. */
export function expectedScores(
  x: ArrayLike<number>,
  k: number,
  weights: ArrayLike<number>,
  bias: number,
): number[] {
  const rows = x.length / k;
  return Array.from({ length: rows }, (_, r) => {
    let z = bias;
    for (let j = 0; j < k; j++) z += x[r * k + j]! * weights[j]!;
    return sigmoid(z);
  });
}

/** x·P + c per row for a row-major `[k, d]` projection. */
export function expectedProjection(
  x: ArrayLike<number>,
  k: number,
  projection: ArrayLike<number>,
  offset: ArrayLike<number>,
): number[] {
  const d = offset.length;
  const rows = x.length / k;
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < d; c++) {
      let sum = offset[c]!;
      for (let j = 0; j < k; j++) sum += x[r * k + j]! * projection[j * d + c]!;
      out.push(sum);
    }
  }
  return out;
}

export function assertClose(actual: readonly number[], expected: readonly number[], tolerance = 1e-5): void {
  assert.equal(actual.length, expected.length, 'element count');
  actual.forEach((a, i) => {
    assert.ok(Math.abs(a - expected[i]!) <= tolerance, `element ${i}: ${a} vs expected ${expected[i]}`);
  });
}
