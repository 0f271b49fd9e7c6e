/**
 * Both services as their own processes, ready to fuzz: `lattice orchestrator` against the reference
 * servers (duo and fuzz_legacy models) and `lattice vss serving` on a seeded data directory. Shared
 * by the in-suite fuzz test and `npm run fuzz`.
 */

import {
  DUO_ID,
  type OrchestratorProcess,
  startOrchestratorProcess,
  writeDuoModel,
} from '../../support/orchestrator-process.js';
import { eventually } from '../../support/servers.js';
import { type ReferenceServers, startReferenceServers } from '../../support/stack.js';
import { seedVssDataDir, startVssProcess, type VssProcess } from '../../support/vss-process.js';
import { Client as VssClient } from '../../vss/serving/harness.js';
import type { FuzzRpc } from './fuzz-runner.js';
import {
  fuzzDuoConfig,
  LEGACY_ID,
  legacyConfig,
  orchestratorKnownGood,
  orchestratorRpcs,
} from './orchestrator-rpcs.js';
import { type VssWorldView, vssKnownGood, vssRpcs } from './vss-rpcs.js';

export interface FuzzService {
  name: 'orchestrator' | 'vss';
  address: string;
  pid: number;
  rpcs: FuzzRpc[];
  knownGood(): Promise<void>;
  /** The ops server (/healthz, /readyz, /metrics), where the process has one. */
  opsUrl?: string;
  /** Undefined while the process runs; its exit otherwise. */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  output(): string;
}

export interface FuzzServices {
  orchestrator: FuzzService;
  vss: FuzzService;
  servers: ReferenceServers;
  /** Stops everything; resolves to the two processes' exit codes. */
  stop(): Promise<{ orchestrator: number | null; vss: number | null }>;
}

export async function startFuzzServices(
  options: { nice?: number; vssCount?: number } = {},
): Promise<FuzzServices> {
  const servers = await startReferenceServers({ prepareModels: writeDuoModel });
  let orchestrator: OrchestratorProcess | undefined;
  let vss: VssProcess | undefined;
  const closers: (() => void)[] = [];
  try {
    await servers.config.put(`models/${DUO_ID}`, fuzzDuoConfig(servers.targets.modelServer));
    await servers.config.put(`models/${LEGACY_ID}`, legacyConfig());
    const world = await seedVssDataDir({ count: options.vssCount });
    [orchestrator, vss] = await Promise.all([
      startOrchestratorProcess({
        configDir: servers.configDir,
        featureStoreTarget: servers.targets.featureStore,
        nice: options.nice,
      }),
      startVssProcess({
        dataDir: world.dataDir,
        nice: options.nice,
        env: { LATTICE_VSS_RECALL_SAMPLE_RATE: '0' },
      }),
    ]);
    const view: VssWorldView = { fixture: world.fixture, tokens: [] };
    const orchestratorGood = orchestratorKnownGood(orchestrator.address, servers);
    const vssGood = vssKnownGood(vss.address, view);
    closers.push(orchestratorGood.close, vssGood.close);
    // Fresh processes: the first calls also connect channels and load models; wait until both answer.
    const ready = async (check: () => Promise<void>) => {
      let last: unknown;
      await eventually(
        async () => {
          try {
            await check();
            return true;
          } catch (err) {
            last = err;
            return false;
          }
        },
        30_000,
        'the known-good request',
      ).catch((err: Error) => {
        throw new Error(`${err.message}: ${String(last)}`);
      });
    };
    await Promise.all([ready(orchestratorGood.check), ready(vssGood.check)]);
    // A page token of a real query, for the "token of another query" cases.
    const probe = new VssClient(vss.address);
    const page = await probe.search({
      queries: [{ candidateId: world.fixture.ids[3], pageToken: '', filters: [] }],
      pageSize: 3,
    });
    probe.close();
    if (page.results[0]?.nextPageToken) view.tokens.push(page.results[0].nextPageToken);
    const o = orchestrator;
    const v = vss;
    return {
      servers,
      orchestrator: {
        name: 'orchestrator',
        address: o.address,
        pid: o.child.pid!,
        rpcs: orchestratorRpcs(servers),
        knownGood: orchestratorGood.check,
        opsUrl: o.opsUrl,
        exited: o.exited,
        output: o.output,
      },
      vss: {
        name: 'vss',
        address: v.address,
        pid: v.child.pid!,
        rpcs: vssRpcs(view),
        knownGood: vssGood.check,
        exited: v.exited,
        output: v.output,
      },
      stop: async () => {
        for (const close of closers) close();
        const [oc, vc] = await Promise.all([o.stop(), v.stop()]);
        await servers.stop();
        return { orchestrator: oc, vss: vc };
      },
    };
  } catch (err) {
    for (const close of closers) close();
    await Promise.all([orchestrator?.stop(), vss?.stop()]);
    await servers.stop();
    throw err;
  }
}
