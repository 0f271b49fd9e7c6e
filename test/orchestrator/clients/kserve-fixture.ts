/** A small KServe v2 gRPC model server for orchestrator tests: records each ModelInfer, answers as told. */
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import {
  GRPCInferenceServiceService,
  type InferTensorContents,
  type ModelInferRequest,
  type ModelInferResponse,
  type ModelInferResponse_InferOutputTensor,
} from '../../../src/gen/inference/grpc_service.js';
import { startServer, type TestServer } from './grpc-fixtures.js';

export type KServeAnswer = (request: ModelInferRequest) => ModelInferResponse;

export const emptyContents = (): InferTensorContents => ({
  boolContents: [],
  intContents: [],
  int64Contents: [],
  uintContents: [],
  uint64Contents: [],
  fp32Contents: [],
  fp64Contents: [],
  bytesContents: [],
});

/** An output tensor description; `contents` for typed (non-raw) answers. */
export const outputTensor = (
  name: string,
  datatype: string,
  shape: readonly number[],
  contents?: InferTensorContents,
): ModelInferResponse_InferOutputTensor => ({
  name,
  datatype,
  shape: shape.map(BigInt),
  parameters: {},
  contents,
});

/** A response carrying `outputs` with raw contents (one buffer each, in order). */
export function rawResponse(
  request: ModelInferRequest,
  outputs: readonly { name: string; datatype: string; shape: readonly number[]; data: Uint8Array }[],
): ModelInferResponse {
  return {
    modelName: request.modelName,
    modelVersion: '1',
    id: request.id,
    parameters: {},
    outputs: outputs.map((o) => outputTensor(o.name, o.datatype, o.shape)),
    rawOutputContents: outputs.map((o) => Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength)),
  };
}

/** An input of a recorded request: its raw bytes copied into a fresh, aligned buffer. */
export function rawInput(request: ModelInferRequest, name: string): Uint8Array {
  const index = request.inputs.findIndex((i) => i.name === name);
  if (index < 0) throw new Error(`the request has no input "${name}"`);
  return Uint8Array.from(request.rawInputContents[index]!);
}

export class FakeKServe {
  server!: TestServer;
  readonly requests: ModelInferRequest[] = [];

  constructor(public answer: KServeAnswer) {}

  get target(): string {
    return this.server.target;
  }

  async start(): Promise<this> {
    this.server = await startServer((s) =>
      s.addService(GRPCInferenceServiceService, {
        modelInfer: (
          call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>,
          cb: sendUnaryData<ModelInferResponse>,
        ) => {
          this.requests.push(call.request);
          cb(null, this.answer(call.request));
        },
      }),
    );
    return this;
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}
