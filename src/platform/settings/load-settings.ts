import { readFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { describeError, invalidArgument, LatticeError } from '../errors.js';
import { type Settings, settingsSchema } from './schema.js';

type EnvKind = 'string' | 'number' | 'boolean' | 'list' | 'tokens';
type EnvSetting = { env: string; path: string; kind: EnvKind };

/** An admission class's three settings (`grpc.admission.<class>.*`). */
function admissionEnv(admissionClass: 'light' | 'heavy'): EnvSetting[] {
  const env = `LATTICE_GRPC_ADMISSION_${admissionClass.toUpperCase()}`;
  const path = `grpc.admission.${admissionClass}`;
  return [
    { env: `${env}_CONCURRENCY`, path: `${path}.concurrency`, kind: 'number' },
    { env: `${env}_QUEUE`, path: `${path}.queue`, kind: 'number' },
    { env: `${env}_QUEUE_TIMEOUT_MS`, path: `${path}.queueTimeoutMs`, kind: 'number' },
  ];
}

/**
 * A vss cluster's vector database: its kind and directory under `<prefix>VECTOR_DB`, the Qdrant
 * server under `<qdrantPrefix>QDRANT_` (the default cluster's Qdrant variables predate clusters).
 */
function vectorDbEnv(prefix: string, qdrantPrefix: string, path: string): EnvSetting[] {
  return [
    { env: `${prefix}VECTOR_DB`, path: `${path}.kind`, kind: 'string' },
    { env: `${prefix}VECTOR_DB_DIR`, path: `${path}.dir`, kind: 'string' },
    { env: `${qdrantPrefix}QDRANT_URL`, path: `${path}.url`, kind: 'string' },
    { env: `${qdrantPrefix}QDRANT_API_KEY`, path: `${path}.apiKey`, kind: 'string' },
    { env: `${qdrantPrefix}QDRANT_TIMEOUT_MS`, path: `${path}.timeoutMs`, kind: 'number' },
  ];
}

/** Every environment variable Lattice reads, and the setting it sets. */
export const settingsEnv: ReadonlyArray<EnvSetting> = [
  { env: 'LATTICE_DATA_DIR', path: 'dataDir', kind: 'string' },
  { env: 'LATTICE_HOST', path: 'host', kind: 'string' },
  { env: 'LATTICE_LOG_LEVEL', path: 'logLevel', kind: 'string' },
  { env: 'LATTICE_CONFIG_STORE', path: 'configStore.kind', kind: 'string' },
  { env: 'LATTICE_CONFIG_DIR', path: 'configStore.dir', kind: 'string' },
  { env: 'LATTICE_ETCD_ENDPOINTS', path: 'configStore.endpoints', kind: 'list' },
  { env: 'LATTICE_ETCD_PREFIX', path: 'configStore.prefix', kind: 'string' },
  { env: 'LATTICE_QUEUE', path: 'queue.kind', kind: 'string' },
  { env: 'LATTICE_QUEUE_JOURNAL_DIR', path: 'queue.journalDir', kind: 'string' },
  { env: 'LATTICE_NATS_SERVERS', path: 'queue.servers', kind: 'list' },
  { env: 'LATTICE_SQL', path: 'sql.kind', kind: 'string' },
  { env: 'LATTICE_SQL_DATA_DIR', path: 'sql.dataDir', kind: 'string' },
  { env: 'LATTICE_SQL_SHARED_BUFFERS_MB', path: 'sql.sharedBuffersMb', kind: 'number' },
  { env: 'LATTICE_POSTGRES_URL', path: 'sql.url', kind: 'string' },
  { env: 'LATTICE_POSTGRES_SCHEMA', path: 'sql.schema', kind: 'string' },
  { env: 'LATTICE_SQL_STATEMENT_TIMEOUT_MS', path: 'sql.statementTimeoutMs', kind: 'number' },
  { env: 'LATTICE_CACHE', path: 'cache.kind', kind: 'string' },
  { env: 'LATTICE_CACHE_MAX_BYTES', path: 'cache.maxBytes', kind: 'number' },
  { env: 'LATTICE_REDIS_URL', path: 'cache.url', kind: 'string' },
  { env: 'LATTICE_METRICS_PORT', path: 'metrics.port', kind: 'number' },
  { env: 'LATTICE_STATSD_HOST', path: 'metrics.statsdHost', kind: 'string' },
  { env: 'LATTICE_STATSD_PORT', path: 'metrics.statsdPort', kind: 'number' },
  { env: 'LATTICE_STATSD_PREFIX', path: 'metrics.statsdPrefix', kind: 'string' },
  { env: 'LATTICE_STATSD_TAGS', path: 'metrics.statsdTags', kind: 'string' },
  { env: 'LATTICE_READY_TIMEOUT_MS', path: 'metrics.readyTimeoutMs', kind: 'number' },
  { env: 'LATTICE_CALLER_TOKENS', path: 'auth.callerTokens', kind: 'tokens' },
  { env: 'LATTICE_CALLER_ID', path: 'auth.callerId', kind: 'string' },
  { env: 'LATTICE_CALLER_TOKEN', path: 'auth.callerToken', kind: 'string' },
  { env: 'LATTICE_ALLOW_UNAUTHENTICATED', path: 'auth.allowUnauthenticated', kind: 'boolean' },
  { env: 'LATTICE_GRPC_PORT', path: 'grpc.port', kind: 'number' },
  { env: 'LATTICE_GRPC_DEFAULT_DEADLINE_MS', path: 'grpc.defaultDeadlineMs', kind: 'number' },
  { env: 'LATTICE_GRPC_MAX_INFLIGHT_CALLS', path: 'grpc.maxInFlightCalls', kind: 'number' },
  ...admissionEnv('light'),
  ...admissionEnv('heavy'),
  { env: 'LATTICE_TLS_CERT', path: 'tls.cert', kind: 'string' },
  { env: 'LATTICE_TLS_KEY', path: 'tls.key', kind: 'string' },
  { env: 'LATTICE_TLS_CLIENT_CA', path: 'tls.clientCa', kind: 'string' },
  { env: 'LATTICE_TLS_CLIENT_AUTH', path: 'tls.clientAuth', kind: 'string' },
  { env: 'LATTICE_TLS_OUTGOING', path: 'tls.outgoing', kind: 'string' },
  { env: 'LATTICE_TLS_CA', path: 'tls.ca', kind: 'string' },
  { env: 'LATTICE_TLS_CLIENT_CERT', path: 'tls.clientCert', kind: 'string' },
  { env: 'LATTICE_TLS_CLIENT_KEY', path: 'tls.clientKey', kind: 'string' },
  { env: 'LATTICE_TLS_SERVER_NAME', path: 'tls.serverName', kind: 'string' },
  { env: 'LATTICE_ORCHESTRATOR_PORT', path: 'orchestrator.port', kind: 'number' },
  { env: 'LATTICE_FEATURE_STORE_TARGET', path: 'orchestrator.featureStoreTarget', kind: 'string' },
  { env: 'LATTICE_FEATURE_STORE_CALLER_ID', path: 'orchestrator.featureStoreCallerId', kind: 'string' },
  { env: 'LATTICE_FEATURE_STORE_CALLER_TOKEN', path: 'orchestrator.featureStoreCallerToken', kind: 'string' },
  { env: 'LATTICE_ORCHESTRATOR_CHANNELS_PER_TARGET', path: 'orchestrator.channelsPerTarget', kind: 'number' },
  {
    env: 'LATTICE_ORCHESTRATOR_MAX_INFLIGHT_MATRIX_BYTES',
    path: 'orchestrator.maxInFlightMatrixBytes',
    kind: 'number',
  },
  {
    env: 'LATTICE_ORCHESTRATOR_MAX_INFLIGHT_PER_ENDPOINT',
    path: 'orchestrator.maxInFlightPerEndpoint',
    kind: 'number',
  },
  { env: 'LATTICE_ORCHESTRATOR_SHADOW_QUEUE_SIZE', path: 'orchestrator.shadowQueueSize', kind: 'number' },
  { env: 'LATTICE_ORCHESTRATOR_SHADOW_CONCURRENCY', path: 'orchestrator.shadowConcurrency', kind: 'number' },
  { env: 'LATTICE_ORCHESTRATOR_SHADOW_DEADLINE_MS', path: 'orchestrator.shadowDeadlineMs', kind: 'number' },
  { env: 'LATTICE_LOG_TOPIC', path: 'orchestrator.logTopic', kind: 'string' },
  { env: 'LATTICE_LOG_TOPIC_RETENTION_MS', path: 'orchestrator.logTopicRetentionMs', kind: 'number' },
  { env: 'LATTICE_LOG_TOPIC_MAX_BYTES', path: 'orchestrator.logTopicMaxBytes', kind: 'number' },
  { env: 'LATTICE_LOG_BUFFER_MAX_BYTES', path: 'orchestrator.logBufferMaxBytes', kind: 'number' },
  { env: 'LATTICE_FEATURESTORE_PORT', path: 'featurestore.port', kind: 'number' },
  { env: 'LATTICE_FEATURESTORE_REGISTRY', path: 'featurestore.registry', kind: 'string' },
  { env: 'LATTICE_MODELSERVER_PORT', path: 'modelserver.port', kind: 'number' },
  { env: 'LATTICE_MODEL_REPOSITORY', path: 'modelserver.repository', kind: 'string' },
  { env: 'LATTICE_COMPUTE_PORT', path: 'compute.port', kind: 'number' },
  { env: 'LATTICE_VSS_SERVING_PORT', path: 'vss.servingPort', kind: 'number' },
  { env: 'LATTICE_VSS_PAGE_TOKEN_SECRET', path: 'vss.pageTokenSecret', kind: 'string' },
  { env: 'LATTICE_VSS_RECALL_SAMPLE_RATE', path: 'vss.recallSampleRate', kind: 'number' },
  { env: 'LATTICE_VSS_ADMIN_PORT', path: 'vss.admin.port', kind: 'number' },
  { env: 'LATTICE_VSS_ADMIN_API_KEYS', path: 'vss.admin.apiKeys', kind: 'list' },
  { env: 'LATTICE_VSS_TRAINING_DATA_ROOTS', path: 'vss.admin.trainingDataRoots', kind: 'list' },
  { env: 'LATTICE_VSS_JOB_RUNNER', path: 'vss.admin.jobRunner.kind', kind: 'string' },
  { env: 'LATTICE_VSS_JOB_RUNNER_URL', path: 'vss.admin.jobRunner.url', kind: 'string' },
  { env: 'LATTICE_VSS_JOB_LEASE_MS', path: 'vss.admin.jobRunner.leaseMs', kind: 'number' },
  { env: 'LATTICE_VSS_RECALL_GATE_SAMPLE_SIZE', path: 'vss.admin.recallSampleSize', kind: 'number' },
  { env: 'LATTICE_VSS_RECALL_GATE_K', path: 'vss.admin.recallK', kind: 'number' },
  { env: 'LATTICE_VSS_ROLLBACK_GRACE_MS', path: 'vss.admin.rollbackGraceMs', kind: 'number' },
  { env: 'LATTICE_VSS_AUTO_ROLLBACK', path: 'vss.admin.autoRollback.enabled', kind: 'boolean' },
  { env: 'LATTICE_VSS_AUTO_ROLLBACK_WINDOW_MS', path: 'vss.admin.autoRollback.windowMs', kind: 'number' },
  { env: 'LATTICE_VSS_AUTO_ROLLBACK_MIN_SAMPLES', path: 'vss.admin.autoRollback.minSamples', kind: 'number' },
  ...vectorDbEnv('LATTICE_VSS_', 'LATTICE_', 'vss.vectorDb'),
  { env: 'LATTICE_VSS_VECTOR_DB_BUILD_THREADS', path: 'vss.vectorDb.buildThreads', kind: 'number' },
  { env: 'LATTICE_VSS_VECTOR_DB_SEARCH_THREADS', path: 'vss.vectorDb.searchThreads', kind: 'number' },
  ...vectorDbEnv('LATTICE_VSS_PRODUCTION_', 'LATTICE_VSS_PRODUCTION_', 'vss.clusters.production.vectorDb'),
  {
    env: 'LATTICE_VSS_PRODUCTION_CACHE_KEY_PREFIX',
    path: 'vss.clusters.production.cacheKeyPrefix',
    kind: 'string',
  },
];

/** Settings with every derived default filled in: the embedded adapters' directories are absolute. */
export type LoadedSettings = Settings & {
  configStore: { dir: string };
  modelserver: { repository: string };
  sql: { dataDir: string };
  queue: { journalDir: string | undefined };
  vss: {
    vectorDb: { dir: string };
    clusters: { production: { vectorDb: { dir: string } } };
    admin: { trainingDataRoots: string[] };
  };
};

export interface LoadSettingsOptions {
  /** Environment to read; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** A JSON or YAML settings file; defaults to `$LATTICE_SETTINGS_FILE`. */
  file?: string;
  /** Values that win over the file and the environment (e.g. CLI flags), as a nested object. */
  overrides?: Record<string, unknown>;
}

type Json = Record<string, unknown>;

function setPath(target: Json, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as Json;
  }
  node[parts.at(-1)!] = value;
}

function mergeInto(target: Json, source: Json): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      typeof existing === 'object' &&
      existing !== null &&
      !Array.isArray(existing)
    ) {
      mergeInto(existing as Json, value as Json);
    } else {
      target[key] = value;
    }
  }
}

function parseEnvValue(env: string, raw: string, kind: EnvKind): unknown {
  switch (kind) {
    case 'string':
      return raw;
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) {
        throw invalidArgument(`setting ${env}=${JSON.stringify(raw)} is not a number`, env);
      }
      return n;
    }
    case 'boolean':
      if (/^(true|1)$/i.test(raw.trim())) return true;
      if (/^(false|0)$/i.test(raw.trim())) return false;
      throw invalidArgument(`setting ${env}=${JSON.stringify(raw)} is not true or false`, env);
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    case 'tokens': {
      const tokens: Record<string, string> = {};
      for (const pair of raw.split(',').filter((s) => s.trim() !== '')) {
        const at = pair.indexOf(':');
        if (at <= 0 || at === pair.length - 1) {
          throw invalidArgument(
            `setting ${env}: expected "caller-id:token,...", got ${JSON.stringify(pair)}`,
            env,
          );
        }
        tokens[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
      }
      return tokens;
    }
  }
}

function readSettingsFile(file: string): Json {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalidArgument(`settings file ${file} cannot be read: ${describeError(err)}`, file);
  }
  let parsed: unknown;
  try {
    parsed = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw invalidArgument(
      `settings file ${file} is not valid ${extname(file) === '.json' ? 'JSON' : 'YAML'}: ${describeError(err)}`,
      file,
    );
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidArgument(`settings file ${file} must hold an object at the top level`, file);
  }
  return parsed as Json;
}

function describeIssue(
  issue: z.core.$ZodIssue,
  sources: Map<string, string>,
  file: string | undefined,
): string {
  const path = issue.path.map(String).join('.');
  const keys =
    issue.code === 'unrecognized_keys' ? issue.keys.map((k) => (path ? `${path}.${k}` : k)) : [path];
  const where = keys
    .map((key) => {
      const fromEnv = sources.get(key);
      if (fromEnv) return `${key} (from env ${fromEnv})`;
      return file ? `${key || '(top level)'} (in ${file})` : key || '(top level)';
    })
    .join(', ');
  return `${where}: ${issue.message}`;
}

/**
 * Reads settings from (lowest to highest precedence) defaults, the settings file, the environment
 * and explicit overrides; validates them once and names the setting and its source on any error.
 */
export function loadSettings(options: LoadSettingsOptions = {}): LoadedSettings {
  const env = options.env ?? process.env;
  const file = options.file ?? (env.LATTICE_SETTINGS_FILE || undefined);
  const raw: Json = file ? readSettingsFile(file) : {};
  const sources = new Map<string, string>();
  for (const { env: name, path, kind } of settingsEnv) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    setPath(raw, path, parseEnvValue(name, value, kind));
    sources.set(path, name);
  }
  if (options.overrides) mergeInto(raw, options.overrides);

  const result = settingsSchema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  - ${describeIssue(issue, sources, file)}`);
    throw new LatticeError('INVALID_ARGUMENT', `invalid settings:\n${lines.join('\n')}`, {
      field: result.error.issues[0]?.path.join('.'),
    });
  }
  const settings = result.data;
  const dataDir = resolve(settings.dataDir);
  const repository = resolve(settings.modelserver.repository ?? join(dataDir, 'models'));
  return deepFreeze({
    ...settings,
    dataDir,
    configStore: {
      ...settings.configStore,
      dir: resolve(settings.configStore.dir ?? join(dataDir, 'config')),
    },
    sql: { ...settings.sql, dataDir: resolve(settings.sql.dataDir ?? join(dataDir, 'sql')) },
    modelserver: {
      ...settings.modelserver,
      repository,
    },
    vss: {
      ...settings.vss,
      admin: {
        ...settings.vss.admin,
        trainingDataRoots: (settings.vss.admin.trainingDataRoots ?? [dataDir, repository]).map((root) =>
          resolve(root),
        ),
      },
      vectorDb: {
        ...settings.vss.vectorDb,
        dir: resolve(settings.vss.vectorDb.dir ?? join(dataDir, 'vectordb')),
      },
      clusters: {
        ...settings.vss.clusters,
        production: {
          ...settings.vss.clusters.production,
          vectorDb: {
            ...settings.vss.clusters.production.vectorDb,
            dir: resolve(
              settings.vss.clusters.production.vectorDb.dir ?? join(dataDir, 'vectordb-production'),
            ),
          },
        },
      },
    },
    queue: {
      ...settings.queue,
      journalDir:
        settings.queue.journalDir === ''
          ? undefined
          : resolve(settings.queue.journalDir ?? join(dataDir, 'queue')),
    },
  });
}

/**
 * Settings are validated once and then read by every part of the process, so nothing may change
 * them afterwards: a value a command derives (a bound port, a flag) travels as its own argument.
 */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** The caller-token auth of the settings, in the shape the gRPC server takes (off when no tokens are set). */
export function callerAuth(settings: Settings): {
  tokens: Record<string, string>;
  idHeader: string;
  tokenHeader: string;
} {
  return {
    tokens: settings.auth.callerTokens,
    idHeader: settings.auth.callerIdHeader,
    tokenHeader: settings.auth.callerTokenHeader,
  };
}

/**
 * The keys of an ops server's JSON API (platform/http/api-auth.ts): the caller tokens, and the vss
 * admin API keys when the process runs the admin API (`withAdminKeys`).
 */
export function apiAuthOptions(
  settings: Settings,
  withAdminKeys: boolean,
): {
  callerTokens: Record<string, string>;
  idHeader: string;
  tokenHeader: string;
  adminApiKeys: string[];
} {
  return {
    ...callerAuth(settings),
    callerTokens: settings.auth.callerTokens,
    adminApiKeys: withAdminKeys ? [...settings.vss.admin.apiKeys] : [],
  };
}

/**
 * What the settings give a gRPC server that is guarded like the platform's own: caller-token auth and
 * the `grpc.*` limits (message size, shutdown grace, default deadline, calls in flight, admission).
 */
export function grpcServerSettings(settings: Settings): {
  auth: ReturnType<typeof callerAuth>;
  maxMessageBytes: number;
  shutdownGraceMs: number;
  defaultDeadlineMs: number;
  maxInFlightCalls: number;
  admission: Settings['grpc']['admission'];
} {
  const { maxMessageBytes, shutdownGraceMs, defaultDeadlineMs, maxInFlightCalls, admission } = settings.grpc;
  return {
    auth: callerAuth(settings),
    maxMessageBytes,
    shutdownGraceMs,
    defaultDeadlineMs,
    maxInFlightCalls,
    admission,
  };
}
