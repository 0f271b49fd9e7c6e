/**
 * The reference model server as a part of a process: in `lattice up` an internal peer of the
 * orchestrator, without caller tokens; alone (`lattice modelserver`) guarded by them.
 */
import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import { grpcServerSettings } from '../platform/settings/index.js';
import type { ModelRepository } from './model-repository.js';
import { startModelServer } from './modelserver-server.js';

export interface ModelServerPart extends ListeningPart {
  /** The models it serves. */
  readonly repository: ModelRepository;
  /** Rescans the repository; on failure the loaded models keep serving and the error names the files. */
  reload(): Promise<void>;
}

export interface ModelServerPartOptions {
  /** The model repository; by default settings `modelserver.repository`. */
  repository?: string;
  /** The address it binds; by default settings `host`. */
  host?: string;
  /** Dynamic batching window in ms (0, the default, turns batching off) and the rows that end a batch. */
  batchWindowMs?: number;
  maxBatchRows?: number;
  /**
   * Caller tokens (settings `auth`) guard its API and the settings' gRPC limits (`grpc.*`) apply, as
   * for a server that runs as its own process (`lattice modelserver`).
   */
  ownProcess?: boolean;
}

/** The reference model server over the model repository (settings `modelserver.repository`). */
export async function startModelServerPart(
  platform: Platform,
  port = platform.settings.modelserver.port,
  options: ModelServerPartOptions = {},
): Promise<ModelServerPart> {
  const { settings, logger, metrics } = platform;
  const repository = options.repository ?? settings.modelserver.repository;
  const host = options.host ?? settings.host;
  const running = await startModelServer({
    repository,
    host,
    port,
    batchWindowMs: options.batchWindowMs,
    maxBatchRows: options.maxBatchRows,
    logger,
    metrics,
    ...(options.ownProcess ? grpcServerSettings(settings) : {}),
  });
  return {
    name: 'modelserver',
    port: running.port,
    local: running.local,
    repository: running.repository,
    reload: () => running.reload(),
    endpoints: [
      [`gRPC inference.GRPCInferenceService (KServe v2, ${repository})`, `${host}:${running.port}`],
    ],
    stop: () => running.stop(),
  };
}
