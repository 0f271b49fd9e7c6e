/**
 * The whole orchestrator stack in one test process, on loopback ports: the reference feature store
 * (seeded demo data), model server (the catalog ranker), compute server (the blend), and the
 * orchestrator calling them through its real gRPC clients, each started by its part's start function
 * as `lattice up` starts it. `startReferenceServers` starts the three servers alone, for tests that
 * run the orchestrator as its own process.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BLEND_COMPUTE_ID,
  BLEND_EXPRESSION,
  CATALOG_RANKER_ID,
  catalogRankerConfig,
  writeCatalogRankerModel,
} from '../../examples/catalog-ranker.js';
import { startComputePart } from '../../src/compute/server/index.js';
import {
  type DemoData,
  MemoryFeatureStore,
  seedDemoData,
  startFeatureStorePart,
} from '../../src/featurestore/index.js';
import type { FeatureStore } from '../../src/featurestore/store.js';
import { startModelServerPart } from '../../src/modelserver/index.js';
import { type OrchestratorPart, startOrchestratorPart } from '../../src/orchestrator/index.js';
import type { ConfigStore } from '../../src/platform/config-store/index.js';
import type { CallerAuthOptions, LocalChannel } from '../../src/platform/grpc/index.js';
import { type ServerTls, serveTlsByDefault } from '../../src/platform/http/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';

/** Counts the feature store's reads, by entity, so tests can see what the cache saved. */
export class CountingStore implements FeatureStore {
  readonly reads = new Map<string, number>();
  constructor(private readonly inner: FeatureStore) {}
  write: FeatureStore['write'] = (...args) => this.inner.write(...args);
  read: FeatureStore['read'] = (entity, keys, groups) => {
    this.reads.set(entity, (this.reads.get(entity) ?? 0) + keys.length);
    return this.inner.read(entity, keys, groups);
  };
  delete: FeatureStore['delete'] = (...args) => this.inner.delete(...args);
  close: FeatureStore['close'] = () => this.inner.close();
}

/** The reference servers the orchestrator calls, without an orchestrator (tests run their own, in-process or as a child process). */
export interface ReferenceServers {
  data: DemoData;
  weights: Float32Array;
  bias: number;
  featureStore: CountingStore;
  /** The file config store holding `compute/catalog_blend` and `models/catalog_ranker` (pointing at these servers). */
  config: ConfigStore;
  /** Its directory, for a child process to watch (LATTICE_CONFIG_DIR). */
  configDir: string;
  /** The model server's repository. */
  repository: string;
  targets: { featureStore: string; modelServer: string; computeServer: string };
  /** The three servers' LocalChannels (calls from this process without the network). */
  local: LocalChannel[];
  /** The three servers' own metrics (their grpc_server_* series). */
  metrics: Metrics;
  stopFeatureStore(): Promise<void>;
  stop(): Promise<void>;
}

export interface ReferenceServerOptions {
  users?: number;
  catalogs?: number;
  /** Writes more models into the model server's repository before it starts. */
  prepareModels?: (repository: string) => void;
}

/**
 * A platform of the stack, as `lattice up` builds one from its settings: the file config store in
 * `configDir` (the servers' platform and the orchestrator's share its documents), the memory queue
 * and cache, loopback, silent, none of this process's LATTICE_* environment.
 */
function stackPlatform(
  configDir: string,
  metrics: Metrics,
  overrides: Record<string, unknown> = {},
): Platform {
  const settings = loadSettings({
    env: {},
    overrides: {
      host: '127.0.0.1',
      logLevel: 'silent',
      configStore: { kind: 'file', dir: configDir },
      queue: { kind: 'memory', journalDir: '' },
      cache: { kind: 'memory' },
      ...overrides,
    },
  });
  return new Platform(settings, { metrics });
}

/** Starts the reference feature store (seeded demo data), model server and compute server on loopback ports. */
export async function startReferenceServers(options: ReferenceServerOptions = {}): Promise<ReferenceServers> {
  const featureStore = new CountingStore(new MemoryFeatureStore());
  const data = await seedDemoData(featureStore, {
    users: options.users ?? 20,
    catalogs: options.catalogs ?? 60,
    categories: 6,
  });
  const metrics = new Metrics();
  const configDir = mkdtempSync(join(tmpdir(), 'lattice-stack-config-'));
  const platform = stackPlatform(configDir, metrics);
  const fs = await startFeatureStorePart(platform, 0, {
    served: { store: featureStore, registry: data.registry },
  });
  const repository = mkdtempSync(join(tmpdir(), 'lattice-stack-models-'));
  const { weights, bias } = writeCatalogRankerModel(repository);
  options.prepareModels?.(repository);
  const ms = await startModelServerPart(platform, 0, { repository });
  const config = await platform.configStore();
  await config.put(`compute/${BLEND_COMPUTE_ID}`, { expression: BLEND_EXPRESSION });
  const cs = await startComputePart(platform, 0);
  const targets = {
    featureStore: fs.address,
    modelServer: `127.0.0.1:${ms.port}`,
    computeServer: `127.0.0.1:${cs.port}`,
  };
  await config.put(`models/${CATALOG_RANKER_ID}`, catalogRankerConfig(targets));
  let fsStopped = false;
  return {
    data,
    weights,
    bias,
    featureStore,
    config,
    configDir,
    repository,
    targets,
    local: [fs.local, ms.local, cs.local].filter((channel) => channel !== undefined),
    metrics,
    stopFeatureStore: async () => {
      fsStopped = true;
      await fs.stop();
    },
    stop: async () => {
      await cs.stop();
      await ms.stop();
      if (!fsStopped) await fs.stop();
      await platform.close();
    },
  };
}

export interface Stack {
  data: DemoData;
  weights: Float32Array;
  bias: number;
  featureStore: CountingStore;
  config: ConfigStore;
  metrics: Metrics;
  orchestrator: OrchestratorPart;
  address: string;
  targets: { featureStore: string; modelServer: string; computeServer: string };
  /** The reference servers' own metrics. */
  serverMetrics: Metrics;
  stopFeatureStore(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The reference servers and the orchestrator part in front of them, on a platform of its own (its
 * metrics apart from the servers'; its feature cache and inference-log queue in memory).
 */
export async function startStack(
  options: {
    metrics?: Metrics;
    users?: number;
    catalogs?: number;
    /** Caller-token auth of the orchestrator. */
    auth?: CallerAuthOptions;
    /** The orchestrator's own outbound identity (settings `auth.callerId` / `auth.callerToken`). */
    caller?: { callerId: string; callerToken: string };
    /** TLS of the orchestrator alone (the reference servers behind it stay plaintext). */
    tls?: ServerTls;
    /** The orchestrator calls the servers through their LocalChannels, as in `lattice up`. */
    local?: boolean;
  } = {},
): Promise<Stack> {
  const metrics = options.metrics ?? new Metrics();
  const servers = await startReferenceServers({ users: options.users, catalogs: options.catalogs });
  const { auth, caller } = options;
  const platform = stackPlatform(servers.configDir, metrics, {
    ...(auth || caller
      ? {
          auth: {
            ...(auth && {
              callerTokens: auth.tokens,
              callerIdHeader: auth.idHeader,
              callerTokenHeader: auth.tokenHeader,
            }),
            ...caller,
          },
        }
      : {}),
  });
  // The server reads the process's default TLS when it is created; its clients follow the
  // platform's settings, whose TLS is off.
  if (options.tls) serveTlsByDefault(options.tls);
  const orchestrator = await startOrchestratorPart(platform, 0, {
    featureStoreTarget: servers.targets.featureStore,
    local: options.local ? servers.local : undefined,
  }).finally(() => {
    if (options.tls) serveTlsByDefault(undefined);
  });
  orchestrator.open?.();
  return {
    data: servers.data,
    weights: servers.weights,
    bias: servers.bias,
    featureStore: servers.featureStore,
    config: servers.config,
    metrics,
    orchestrator,
    address: `127.0.0.1:${orchestrator.port}`,
    targets: servers.targets,
    serverMetrics: servers.metrics,
    stopFeatureStore: servers.stopFeatureStore,
    stop: async () => {
      await orchestrator.stop();
      await platform.close();
      await servers.stop();
    },
  };
}
