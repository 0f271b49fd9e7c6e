/**
 * The reference compute server as a part of a process, over the platform's config store: in `lattice
 * up` an internal peer of the orchestrator, without caller tokens; alone (`lattice compute`) guarded
 * by them.
 */
import type { Platform } from '../../platform/platform.js';
import type { ListeningPart } from '../../platform/running-part.js';
import { grpcServerSettings } from '../../platform/settings/index.js';
import type { ExpressionRegistry } from './expression-registry.js';
import { startComputeServer } from './numerix-server.js';

export interface ComputePart extends ListeningPart {
  /** The live expressions, for status reporting. */
  readonly registry: ExpressionRegistry;
}

export interface ComputePartOptions {
  /**
   * Caller tokens (settings `auth`) guard its API and the settings' gRPC limits (`grpc.*`) apply, as
   * for a server that runs as its own process (`lattice compute`).
   */
  ownProcess?: boolean;
}

/** The reference compute server over the expressions under `compute/`. */
export async function startComputePart(
  platform: Platform,
  port = platform.settings.compute.port,
  options: ComputePartOptions = {},
): Promise<ComputePart> {
  const { settings, logger, metrics } = platform;
  const store = await platform.configStore();
  const running = await startComputeServer({
    store,
    host: settings.host,
    port,
    logger,
    metrics,
    ...(options.ownProcess ? grpcServerSettings(settings) : {}),
  });
  return {
    name: 'compute',
    port: running.port,
    local: running.local,
    registry: running.registry,
    endpoints: [['gRPC numerix.Numerix', `${settings.host}:${running.port}`]],
    stop: () => running.stop(),
  };
}
