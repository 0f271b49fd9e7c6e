/**
 * `lattice models`: every model config under `models/` in the configured config store, validated and
 * built exactly as a running orchestrator's ModelRegistry does on load (schema, DAG and columns, then
 * each component), with the revision it would serve. It only reads the store: the file store takes
 * no lock, so this works beside a running `lattice up`.
 */

import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { parse as parseYaml } from 'yaml';
import {
  MODEL_STATUS_PATH,
  type ModelStatusAnswer,
  type ServedModelStatus,
} from '../../orchestrator/api/model-status-route.js';
import { createOrchestratorClients } from '../../orchestrator/clients/index.js';
import { createComponentBuilder } from '../../orchestrator/components/index.js';
import { ModelConfigError, ModelRegistry } from '../../orchestrator/config/index.js';
import { RevisionHistory } from '../../orchestrator/console/index.js';
import { scanDocuments } from '../../platform/config-store/file/file-tree.js';
import type { ConfigStore } from '../../platform/config-store/index.js';
import { describeError, isLatticeError, LatticeError } from '../../platform/errors.js';
import { grpcChannelCredentials } from '../../platform/grpc/tls-credentials.js';
import { tlsOf } from '../../platform/http/tls-material.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { Platform } from '../../platform/platform.js';
import { loadSettings } from '../../platform/settings/index.js';
import { type Invocation, UsageError } from '../command-kit.js';
import { opsBaseUrl } from '../ops-url.js';
import { textTable } from '../text-table.js';
import type { ModelsApplyOptions, ModelsOptions } from './models.command.js';
import { describePorts } from './ports.js';

/** Where the orchestrator's ModelRegistry reads model configs (its default prefix). */
const MODELS_PREFIX = 'models/';

/** One model config as `lattice models --json` prints it. */
export interface ModelConfigState {
  model_config_id: string;
  /** The config store key (`models/<id>`). */
  key: string;
  valid: boolean;
  /** Why it is invalid: the document's parse error, or every validation problem. */
  error?: string;
  /** Each validation problem with its JSON path, when the schema, DAG or column checks failed. */
  problems?: { path: string; message: string }[];
  /**
   * The config store revision as read now. etcd: the key's mod_revision, which is the config_version
   * a running orchestrator serves and logs once it loaded this version. File store: this reader's
   * revision (from the file's modification time); each process numbers file versions itself.
   */
  revision: number;
  /** File store: the document's file. */
  file?: string;
  /** File store: when the document last changed (its file's modification time). etcd keeps no time. */
  changed_at?: string;
  /**
   * What the running orchestrator (its ops server's GET /models) serves for this id: the version it
   * loaded and when (its last reload), and the latest change it rejected. `null` when it answered
   * and serves nothing under this id; absent when no orchestrator answered.
   */
  serving?: Omit<ServedModelStatus, 'model_config_id'> | null;
}

/** What a running orchestrator answered, or why none did. */
type Served = { url: string; models: Map<string, ServedModelStatus> } | { url: string; error: string };

export async function runModels({ options, context }: Invocation<ModelsOptions>): Promise<void> {
  await withModelRegistry(context.settingsFile, async ({ settings, platform, store, registry }) => {
    const files =
      settings.configStore.kind === 'file' ? await fileTimes(settings.configStore.dir) : undefined;
    const [states, served] = await Promise.all([
      modelConfigStates(store, registry, files),
      servedModels(opsBaseUrl(settings, options.address)),
    ]);
    if ('models' in served) {
      for (const state of states) {
        const found = served.models.get(state.model_config_id);
        if (found === undefined) state.serving = null;
        else {
          const { model_config_id: _, ...serving } = found;
          state.serving = serving;
        }
      }
    }
    if (options.json) console.log(JSON.stringify(states, null, 2));
    else printTable(states, describePorts(platform).configStore ?? 'the config store', served);
  });
}

/** GET /models of the running orchestrator's ops server (`base`), within a couple of seconds. */
async function servedModels(base: string): Promise<Served> {
  const url = `${base.replace(/\/+$/, '')}${MODEL_STATUS_PATH}`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    if (!response.ok) return { url, error: `${url} answered HTTP ${response.status}` };
    const body = (await response.json()) as ModelStatusAnswer;
    return { url, models: new Map(body.models.map((m) => [m.model_config_id, m])) };
  } catch (err) {
    return { url, error: `no orchestrator answered at ${url} (${describeError(err)})` };
  }
}

/**
 * `lattice models apply FILE...`: validates each model config document (JSON or YAML) the way the
 * orchestrator does and writes the valid ones to `models/<model_config_id>` in the configured config
 * store, where a running orchestrator picks them up. A document that does not validate is reported
 * with every problem and nothing of it is written (exit 1).
 */
export async function runModelsApply({
  options,
  args,
  context,
}: Invocation<ModelsApplyOptions>): Promise<number> {
  const files = args[0] as string[];
  return withModelRegistry(context.settingsFile, async ({ platform, store, registry }) => {
    const where = describePorts(platform).configStore ?? 'the config store';
    let failed = 0;
    for (const file of files) {
      const document = readDocument(file);
      const id = (document as { model_config_id?: unknown } | undefined)?.model_config_id;
      if (typeof id !== 'string' || id === '' || id.includes('/')) {
        failed++;
        console.error(`${file}: no model_config_id (a name without "/") to store it under`);
        continue;
      }
      try {
        registry.build(id, 'apply', document);
      } catch (err) {
        failed++;
        console.error(`${file}: ${describeError(err)}`);
        continue;
      }
      if (options.dryRun) {
        console.log(`${file}: model config "${id}" is valid (not written: --dry-run)`);
        continue;
      }
      // Recorded before it is written, so a running orchestrator that sees the write finds it recorded.
      const history = new RevisionHistory(store);
      const record = await history.append(id, {
        author: cliAuthor(),
        comment: options.comment ?? '',
        action: 'apply',
        document,
      });
      let revision: number;
      try {
        revision = await store.put(`${MODELS_PREFIX}${id}`, document);
      } catch (err) {
        await history.discard(id, record.revision).catch(() => {});
        throw err;
      }
      console.log(
        `${file}: model config "${id}" is valid; written to ${MODELS_PREFIX}${id} in ${where} (revision ${revision}, history revision ${record.revision})`,
      );
    }
    return failed > 0 ? 1 : 0;
  });
}

/** Who `lattice models apply` records as a revision's author: the OS user, else `cli`. */
function cliAuthor(): string {
  try {
    return userInfo().username || 'cli';
  } catch {
    return 'cli';
  }
}

function readDocument(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${file} cannot be read: ${describeError(err)}`);
  }
  try {
    return /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `${file} is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${describeError(err)}`,
    );
  }
}

interface ModelRegistryContext {
  settings: ReturnType<typeof loadSettings>;
  platform: Platform;
  store: ConfigStore;
  registry: ModelRegistry<unknown>;
}

/**
 * The configured config store and a ModelRegistry built with the orchestrator's own clients, so that
 * components are built as it builds them (channels open lazily and nothing is called).
 */
async function withModelRegistry<T>(
  settingsFile: string | undefined,
  work: (context: ModelRegistryContext) => Promise<T>,
): Promise<T> {
  const settings = loadSettings({ file: settingsFile });
  const metrics = new Metrics();
  const logger = createLogger('lattice', { level: 'silent' });
  const platform = new Platform(settings, { logger, metrics });
  const clients = createOrchestratorClients({
    metrics,
    featureStoreTarget:
      settings.orchestrator.featureStoreTarget ?? `${settings.host}:${settings.featurestore.port}`,
    channelsPerTarget: settings.orchestrator.channelsPerTarget,
    credentials: grpcChannelCredentials(tlsOf(settings).client),
  });
  try {
    const store = await openStore(platform);
    const registry = new ModelRegistry({
      store,
      buildComponent: createComponentBuilder(clients),
      logger,
      metrics,
      prefix: MODELS_PREFIX,
    }) as ModelRegistry<unknown>;
    return await work({ settings, platform, store, registry });
  } finally {
    clients.close();
    await platform.close();
  }
}

async function openStore(platform: Platform): Promise<ConfigStore> {
  try {
    return await platform.configStore();
  } catch (err) {
    const s = platform.settings.configStore;
    const fix =
      s.kind === 'etcd'
        ? `start etcd at ${s.endpoints.join(',')}, or point configStore.endpoints (LATTICE_ETCD_ENDPOINTS) at it`
        : 'check configStore.dir (LATTICE_CONFIG_DIR)';
    throw new LatticeError(
      'UNAVAILABLE',
      `cannot read the model configs from ${describePorts(platform).configStore}: ${isLatticeError(err) ? err.message : describeError(err)}; ${fix}`,
      { cause: err },
    );
  }
}

type FileTimes = ReadonlyMap<string, { file: string; changed_at: string }>;

/** The file store's model documents by key: their file and its modification time. */
async function fileTimes(dir: string): Promise<FileTimes> {
  const times = new Map<string, { file: string; changed_at: string }>();
  for (const document of await scanDocuments(dir, MODELS_PREFIX)) {
    const changed = await stat(document.path).then(
      (st) => st.mtime.toISOString(),
      () => undefined, // removed meanwhile
    );
    if (changed !== undefined) times.set(document.key, { file: document.path, changed_at: changed });
  }
  return times;
}

/** Each document under models/ (the ones the registry would load), valid or not, by id. */
async function modelConfigStates<C>(
  store: ConfigStore,
  registry: ModelRegistry<C>,
  files: FileTimes | undefined,
): Promise<ModelConfigState[]> {
  const states: ModelConfigState[] = [];
  const base = (key: string, revision: number) => ({
    model_config_id: key.slice(MODELS_PREFIX.length),
    key,
    revision,
    ...files?.get(key),
  });
  const entries = await store.list(MODELS_PREFIX, {
    onInvalid: (invalid) => {
      if (isModelKey(invalid.key)) {
        states.push({ ...base(invalid.key, invalid.revision), valid: false, error: invalid.reason });
      }
    },
  });
  for (const entry of entries) {
    if (!isModelKey(entry.key)) continue;
    const state = base(entry.key, entry.revision);
    try {
      registry.build(state.model_config_id, String(entry.revision), entry.value);
      states.push({ ...state, valid: true });
    } catch (err) {
      states.push({
        ...state,
        valid: false,
        error: describeError(err),
        ...(err instanceof ModelConfigError ? { problems: err.problems.map((p) => ({ ...p })) } : {}),
      });
    }
  }
  return states.sort((a, b) => a.model_config_id.localeCompare(b.model_config_id));
}

/** A model document is `models/<id>`, as the registry reads them (deeper keys are not models). */
const isModelKey = (key: string): boolean => {
  const id = key.slice(MODELS_PREFIX.length);
  return id !== '' && !id.includes('/');
};

function printTable(states: readonly ModelConfigState[], where: string, served: Served): void {
  if (states.length === 0) {
    console.log(`No model configs under ${MODELS_PREFIX} in ${where}.`);
    return;
  }
  const header = ['MODEL', 'STATE', 'CHANGED', 'LOADED', 'ERROR'];
  const rows = states.map((s) => [
    s.model_config_id,
    s.valid ? 'valid' : 'INVALID',
    s.changed_at ?? `revision ${s.revision}`,
    loadedCell(s.serving),
    s.error === undefined ? '-' : oneLine(s.error),
  ]);
  console.log(textTable([header, ...rows]));
  const invalid = states.filter((s) => !s.valid).length;
  console.log(
    `${states.length} model config(s) in ${where}, ${invalid} invalid. A running orchestrator reloads a ` +
      'change within a second of CHANGED; an INVALID one is rejected and its last valid version keeps serving.',
  );
  console.log(
    'models' in served
      ? `LOADED is when the orchestrator at ${served.url} loaded the version it serves (its last reload).`
      : `LOADED is unknown: ${served.error}; start the platform, or point --address at the orchestrator's ops server.`,
  );
}

/** The LOADED cell: when the serving version was loaded, and the latest rejected change if any. */
function loadedCell(serving: ModelConfigState['serving']): string {
  if (serving === undefined) return '?';
  if (serving === null) return 'not served';
  const loaded = serving.loaded_at ?? 'never (no valid version)';
  return serving.rejected ? `${loaded} (rejected ${serving.rejected.at})` : loaded;
}

/** A validation error's problem list (`invalid model config x:\n  - a: b\n  - c: d`) on one line. */
function oneLine(error: string): string {
  return error
    .replace(/:\n\s+- /, ': ')
    .replace(/\n\s+- /g, '; ')
    .replace(/\s*\n\s*/g, ' ');
}
