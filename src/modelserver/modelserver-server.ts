import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as ort from 'onnxruntime-node';
import {
  GRPCInferenceServiceService,
  type ModelInferRequest,
  type ModelInferResponse,
  type ModelMetadataResponse_TensorMetadata,
} from '../gen/inference/grpc_service.js';
import { invalidArgument } from '../platform/errors.js';
import {
  type AdmissionLimits,
  type CallContext,
  type CallerAuthOptions,
  GrpcServer,
  type LocalChannel,
  type UnaryHandlers,
} from '../platform/grpc/index.js';
import { createLogger, type Logger } from '../platform/logging/index.js';
import { Metrics } from '../platform/metrics/index.js';
import { packageRoot } from '../platform/package-root.js';
import { Batcher } from './batcher.js';
import { prepareInfer } from './infer-request.js';
import type { TensorSpec, TensorValue } from './loaded-model.js';
import { ModelRepository } from './model-repository.js';
import { encodeRaw } from './tensor-codec.js';

/** The runtime ModelMetadata reports, as Triton names its ONNX backend. */
export const onnxPlatform = 'onnxruntime_onnx';
export const serverName = 'lattice-modelserver';

const serverVersion = (
  JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }
).version;

export interface ModelServerOptions {
  /** Model repository directory: `<repository>/<model>/<version>/model.onnx`. */
  repository: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port, returned by `startModelServer`. */
  port?: number;
  /** Dynamic batching window in ms; 0 (the default) turns batching off. See batcher.ts for trade-offs. */
  batchWindowMs?: number;
  /** With batching on, a batch runs once it holds this many rows. Default 256. */
  maxBatchRows?: number;
  logger?: Logger;
  metrics?: Metrics;
  auth?: CallerAuthOptions;
  maxMessageBytes?: number;
  shutdownGraceMs?: number;
  /** Deadline of calls that carry none (GrpcServer's default when unset). */
  defaultDeadlineMs?: number;
  /** Unary calls in flight before RESOURCE_EXHAUSTED (GrpcServer's default when unset). */
  maxInFlightCalls?: number;
  /** Per-class concurrency and queues (settings `grpc.admission`; GrpcServer's defaults when unset). */
  admission?: AdmissionLimits;
  /** Merged over `{ executionProviders: ['cpu'] }` for every session. */
  sessionOptions?: ort.InferenceSession.SessionOptions;
}

export interface ModelServer {
  /** The bound port. */
  port: number;
  repository: ModelRepository;
  /** Present when batching is on. */
  batcher: Batcher | undefined;
  /** Its methods for callers in this process, without the network (undefined with caller-token auth). */
  local: LocalChannel | undefined;
  /** Rescans the repository; on failure the loaded models keep serving and the error names the files. */
  reload(): Promise<void>;
  /** Stops taking calls, drains in-flight ones, then releases every session. */
  stop(): Promise<void>;
}

function tensorMetadata(spec: TensorSpec): ModelMetadataResponse_TensorMetadata {
  return { name: spec.name, datatype: spec.type.kserve, shape: spec.shape.map((dim) => BigInt(dim)) };
}

/**
 * The KServe v2 `inference.GRPCInferenceService` over a model repository: health, metadata and
 * ModelInfer with raw or typed input contents and raw output contents.
 */
export function inferenceHandlers(
  repository: ModelRepository,
  state: { ready: () => boolean; batcher: Batcher | undefined; metrics: Metrics },
): UnaryHandlers<typeof GRPCInferenceServiceService> {
  const requests = state.metrics.counter(
    'modelserver_infer_requests_total',
    'ModelInfer requests answered, by model and version',
    ['model', 'version'],
  );
  const rows = state.metrics.counter('modelserver_infer_rows_total', 'Rows scored, by model and version', [
    'model',
    'version',
  ]);

  const infer = async (request: ModelInferRequest, context: CallContext): Promise<ModelInferResponse> => {
    if (!request.modelName) throw invalidArgument('model_name is required', 'model_name');
    const model = repository.get(request.modelName, request.modelVersion);
    const prepared = prepareInfer(model, request);
    let results: Map<string, TensorValue>;
    if (state.batcher && prepared.rows !== undefined) {
      results = await state.batcher.submit(prepared, context.signal);
    } else {
      results = await model.run(
        prepared.inputs,
        prepared.outputs.map((spec) => spec.name),
      );
    }
    const labels = { model: model.name, version: String(model.version) };
    requests.inc(labels);
    rows.inc(labels, prepared.rows ?? 1);
    const values = prepared.outputs.map((spec) => ({ spec, value: results.get(spec.name)! }));
    return {
      modelName: model.name,
      modelVersion: String(model.version),
      id: request.id,
      parameters: {},
      outputs: values.map(({ spec, value }) => ({
        name: spec.name,
        datatype: spec.type.kserve,
        shape: value.shape.map((dim) => BigInt(dim)),
        parameters: {},
      })),
      rawOutputContents: values.map(({ value }) => encodeRaw(value.data)),
    };
  };

  return {
    serverLive: async () => ({ live: true }),
    serverReady: async () => ({ ready: state.ready() }),
    // Like Triton: an unknown model is "not ready" rather than an error, so probes need no special case.
    modelReady: async (request) => ({
      ready: state.ready() && !!repository.find(request.name, request.version),
    }),
    serverMetadata: async () => ({ name: serverName, version: serverVersion, extensions: [] }),
    modelMetadata: async (request) => {
      const model = repository.get(request.name, request.version);
      return {
        name: model.name,
        versions: repository.versions(model.name).map((m) => String(m.version)),
        platform: onnxPlatform,
        inputs: model.inputs.map(tensorMetadata),
        outputs: model.outputs.map(tensorMetadata),
      };
    },
    modelInfer: infer,
  };
}

/**
 * Loads every model in the repository (rejecting, with the failing files named, if any cannot be
 * loaded) and serves them over gRPC with the platform's health, reflection, metrics and auth.
 */
export async function startModelServer(options: ModelServerOptions): Promise<ModelServer> {
  const logger = options.logger ?? createLogger('modelserver');
  const metrics = options.metrics ?? new Metrics();
  const repository = await ModelRepository.open(options.repository, {
    sessionOptions: options.sessionOptions,
  });
  const windowMs = options.batchWindowMs ?? 0;
  const batcher =
    windowMs > 0 ? new Batcher({ windowMs, maxRows: Math.max(1, options.maxBatchRows ?? 256) }) : undefined;
  let accepting = false;
  const server = new GrpcServer({
    name: 'modelserver',
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    logger,
    metrics,
    auth: options.auth,
    maxMessageBytes: options.maxMessageBytes,
    reflectionProtos: ['inference/grpc_service.proto'],
    shutdownGraceMs: options.shutdownGraceMs,
    defaultDeadlineMs: options.defaultDeadlineMs,
    maxInFlightCalls: options.maxInFlightCalls,
    admission: options.admission,
  });
  server.addUnaryService(
    GRPCInferenceServiceService,
    inferenceHandlers(repository, { ready: () => accepting, batcher, metrics }),
  );
  let port: number;
  try {
    port = await server.start();
  } catch (err) {
    await repository.close();
    throw err;
  }
  accepting = true;
  logger.info(
    {
      repository: options.repository,
      models: repository.all().map((m) => `${m.name}/${m.version}`),
      batching: batcher ? { windowMs, maxRows: options.maxBatchRows ?? 256 } : 'off',
    },
    'model server ready',
  );
  let stopping: Promise<void> | undefined;
  return {
    port,
    repository,
    batcher,
    local: server.localChannel(),
    reload: () => repository.reload(),
    stop: () => {
      stopping ??= (async () => {
        accepting = false;
        await server.stop();
        await repository.close();
      })();
      return stopping;
    },
  };
}
