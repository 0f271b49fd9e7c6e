import type { MethodDefinition } from '@grpc/grpc-js';
import type { DataType } from '../../datatypes/data-type.js';
import {
  GRPCInferenceServiceService,
  type ModelInferRequest,
  type ModelInferResponse,
  type ModelMetadataResponse_TensorMetadata,
} from '../../gen/inference/grpc_service.js';
import { LatticeError } from '../../platform/errors.js';
import type { CallPolicy, OutboundCallOptions } from './call-policy.js';
import { checkInputTensor, dataTypeOfKserve, kserveDatatype, readOutputTensor } from './kserve-tensors.js';
import type { InferCallOptions, InferRequest, ModelInferer, Tensor } from './model-inferer.js';

export interface TensorMetadata {
  name: string;
  /** As the server spells it, e.g. `FP32`, `BYTES`. */
  datatype: string;
  /** Our type for it; undefined for datatypes we do not read (e.g. BF16). */
  dataType: DataType | undefined;
  /** -1 marks a variable dimension. */
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

/** Probes without a deadline of their own get this long. */
const probeTimeoutMs = 5_000;

function probeOptions(options: Partial<InferCallOptions>): OutboundCallOptions {
  return { signal: options.signal, deadline: options.deadline ?? Date.now() + probeTimeoutMs };
}

function tensorMetadata(t: ModelMetadataResponse_TensorMetadata): TensorMetadata {
  return {
    name: t.name,
    datatype: t.datatype,
    dataType: dataTypeOfKserve(t.datatype),
    shape: t.shape.map((d) => Number(d)),
  };
}

/** The RPCs of `inference.GRPCInferenceService`. */
const Rpc = GRPCInferenceServiceService;

/**
 * KServe v2 / Open Inference Protocol client (`inference.GRPCInferenceService`), the protocol Triton
 * and our reference model server speak. Inputs travel as `raw_input_contents`, one entry per input in
 * input order; outputs are read from `raw_output_contents`, or from the typed `contents` when a server
 * sends no raw data. The endpoint is chosen per call (`target`), so a model config naming a new
 * endpoint needs nothing but its address.
 */
export class KServeClient implements ModelInferer {
  constructor(private readonly policy: CallPolicy) {}

  async infer(target: string, request: InferRequest, options: InferCallOptions): Promise<readonly Tensor[]> {
    const message: ModelInferRequest = {
      modelName: request.modelName,
      modelVersion: request.modelVersion,
      id: '',
      parameters: {},
      inputs: request.inputs.map((tensor) => {
        checkInputTensor(tensor);
        return {
          name: tensor.name,
          datatype: kserveDatatype(tensor.dataType, `inputs.${tensor.name}`),
          shape: tensor.shape.map((d) => BigInt(d)),
          parameters: {},
          contents: undefined,
        };
      }),
      outputs: request.outputs.map((name) => ({ name, parameters: {} })),
      rawInputContents: request.inputs.map(({ data }) =>
        Buffer.from(data.buffer, data.byteOffset, data.byteLength),
      ),
    };
    return this.policy.unary(
      { service: 'model_server', target, method: 'ModelInfer' },
      Rpc.modelInfer,
      message,
      options,
      (response) => readOutputs(response, `model server ${target}: model ${request.modelName}`),
    );
  }

  /** Whether the server is ready for inference (`ServerReady`). */
  serverReady(target: string, options: Partial<InferCallOptions> = {}): Promise<boolean> {
    return this.probe(target, Rpc.serverReady, {}, options, (r) => r.ready);
  }

  /** Whether one model (`version` '' = the server's choice) is loaded and ready (`ModelReady`). */
  modelReady(
    target: string,
    name: string,
    version = '',
    options: Partial<InferCallOptions> = {},
  ): Promise<boolean> {
    return this.probe(target, Rpc.modelReady, { name, version }, options, (r) => r.ready);
  }

  /** A model's versions, platform and tensors (`ModelMetadata`); NOT_FOUND when the server has no such model. */
  modelMetadata(
    target: string,
    name: string,
    version = '',
    options: Partial<InferCallOptions> = {},
  ): Promise<ModelMetadata> {
    return this.probe(target, Rpc.modelMetadata, { name, version }, options, (response) => ({
      name: response.name,
      versions: response.versions,
      platform: response.platform,
      inputs: response.inputs.map(tensorMetadata),
      outputs: response.outputs.map(tensorMetadata),
    }));
  }

  /** A health or metadata RPC, named in metrics by its method (`ModelReady`); a short deadline of its own unless the caller gives one. */
  private probe<Req, Res, T>(
    target: string,
    rpc: MethodDefinition<Req, Res>,
    request: Req,
    options: Partial<InferCallOptions>,
    read: (response: Res) => T,
  ): Promise<T> {
    const method = rpc.path.slice(rpc.path.lastIndexOf('/') + 1);
    return this.policy.unary(
      { service: 'model_server', target, method },
      rpc,
      request,
      probeOptions(options),
      read,
    );
  }
}

function readOutputs(response: ModelInferResponse, where: string): Tensor[] {
  const raw = response.rawOutputContents;
  if (raw.length > 0 && raw.length !== response.outputs.length) {
    throw new LatticeError(
      'INTERNAL',
      `${where}: ${response.outputs.length} outputs but ${raw.length} raw_output_contents entries`,
    );
  }
  return response.outputs.map((output, i) =>
    readOutputTensor(output, raw.length > 0 ? raw[i] : undefined, where),
  );
}
