/**
 * The orchestrator's downstream for the load test, in its own process (so the model server scoring
 * the heavy requests never runs on the load client's event loop and never colours the good
 * requests' timing): the reference servers of test/support/stack.ts with the duo and fuzz_legacy
 * models in a config directory the orchestrator process watches. Prints one JSON line, then serves
 * until stdin closes or SIGTERM.
 */

import { fuzzDuoConfig, LEGACY_ID, legacyConfig } from '../../test/e2e/fuzz/orchestrator-rpcs.js';
import { DUO_ID, writeDuoModel } from '../../test/support/orchestrator-process.js';
import { startReferenceServers } from '../../test/support/stack.js';

export interface LoadDownstream {
  configDir: string;
  featureStore: string;
  catalogs: string[];
}

const servers = await startReferenceServers({ prepareModels: writeDuoModel });
await servers.config.put(`models/${DUO_ID}`, fuzzDuoConfig(servers.targets.modelServer));
await servers.config.put(`models/${LEGACY_ID}`, legacyConfig());
const info: LoadDownstream = {
  configDir: servers.configDir,
  featureStore: servers.targets.featureStore,
  catalogs: servers.data.rows.catalog.map((r) => r.key[0]!),
};
process.stdout.write(`${JSON.stringify(info)}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await servers.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
