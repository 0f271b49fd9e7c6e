/**
 * The reference compute server as a part of `lattice up`, over the platform's config store. It runs
 * without caller tokens: an internal peer of the orchestrator.
 */
import type { Platform } from '../../platform/platform.js';
import type { ListeningPart } from '../../platform/running-part.js';
import { startComputeServer } from './numerix-server.js';

/** The reference compute server over the expressions under `compute/`. */
export async function startComputePart(
  platform: Platform,
  port = platform.settings.compute.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const store = await platform.configStore();
  const running = await startComputeServer({ store, host: settings.host, port, logger, metrics });
  return {
    name: 'compute',
    port: running.port,
    local: running.local,
    endpoints: [['gRPC numerix.Numerix', `${settings.host}:${running.port}`]],
    stop: () => running.stop(),
  };
}
