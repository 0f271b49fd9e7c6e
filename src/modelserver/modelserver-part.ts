/**
 * The reference model server as a part of `lattice up`. It runs without caller tokens: an internal
 * peer of the orchestrator.
 */
import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import { startModelServer } from './modelserver-server.js';

/** The reference model server over the model repository (settings `modelserver.repository`). */
export async function startModelServerPart(
  platform: Platform,
  port = platform.settings.modelserver.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const repository = settings.modelserver.repository;
  const running = await startModelServer({ repository, host: settings.host, port, logger, metrics });
  return {
    name: 'modelserver',
    port: running.port,
    local: running.local,
    endpoints: [
      [`gRPC inference.GRPCInferenceService (KServe v2, ${repository})`, `${settings.host}:${running.port}`],
    ],
    stop: () => running.stop(),
  };
}
