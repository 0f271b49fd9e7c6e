/**
 * `lattice orchestrator` as its own process, for end-to-end tests: started on free loopback ports
 * (`--port 0`, `LATTICE_METRICS_PORT=0`; the bound addresses are read from what it prints) against a
 * config directory and feature store the test owns, stopped with SIGTERM. Also the independent
 * expectations the tests compare served scores with.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FeatureRowInput } from '../../src/featurestore/index.js';
import { logisticRanker, writeModel } from '../../src/modelserver/onnx-builder.js';
import type { ModelConfigInput } from '../../src/orchestrator/config/index.js';
import { eventually } from './servers.js';
import type { ReferenceServers } from './stack.js';

export interface OrchestratorProcess {
  /** `127.0.0.1:port` of the gRPC API. */
  address: string;
  /** `http://127.0.0.1:port` of the ops server (/metrics, /healthz, /readyz). */
  opsUrl: string;
  child: ChildProcess;
  /** Everything the child printed so far (stdout and stderr). */
  output(): string;
  /** Null while running; the exit code (or signal name) once it exited. */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(timeoutMs?: number): Promise<number | null>;
  /** The value of a metric sample on /metrics whose labels include `labels`; 0 when absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

export interface OrchestratorProcessOptions {
  configDir: string;
  featureStoreTarget: string;
  /** Extra environment (queue, log topic, …); wins over the defaults. */
  env?: Record<string, string>;
  startTimeoutMs?: number;
  /** Scheduling niceness of the child (0–19), so a load-generating test leaves CPU to tests running beside it. */
  nice?: number;
  /** Node options before the script (`--cpu-prof`, for profiling a run). */
  nodeArgs?: readonly string[];
}

/** Starts `node bin/lattice.js orchestrator --port 0` and waits until it printed where it listens. */
export async function startOrchestratorProcess(
  options: OrchestratorProcessOptions,
): Promise<OrchestratorProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-orch-proc-'));
  const inherited = Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined && !entry[0].startsWith('LATTICE_') && !entry[0].startsWith('NODE_TEST'),
  );
  const env: Record<string, string> = {
    ...Object.fromEntries(inherited),
    LATTICE_DATA_DIR: dataDir,
    LATTICE_CONFIG_DIR: options.configDir,
    LATTICE_FEATURE_STORE_TARGET: options.featureStoreTarget,
    LATTICE_QUEUE: 'memory',
    LATTICE_QUEUE_JOURNAL_DIR: join(dataDir, 'queue'),
    LATTICE_METRICS_PORT: '0',
    LATTICE_LOG_LEVEL: 'warn',
    ...options.env,
  };
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), 'bin/lattice.js', 'orchestrator', '--port', '0'],
    {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (options.nice !== undefined && child.pid !== undefined) setPriority(child.pid, options.nice);
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve();
    });
  });

  let address: string | undefined;
  let opsUrl: string | undefined;
  try {
    await eventually(
      () => {
        if (exit) throw new Error(`lattice orchestrator exited (${exit.code ?? exit.signal}):\n${output}`);
        address = /gRPC orchestrator\.v1 .*?\s(\d+\.\d+\.\d+\.\d+:\d+)\s*$/m.exec(output)?.[1];
        opsUrl = /HTTP \/healthz .*?\s(http:\/\/\S+)\s*$/m.exec(output)?.[1];
        return address !== undefined && opsUrl !== undefined;
      },
      // Generous: on a loaded 2-core machine (tests and benchmarks beside it) start-up took over 30 s.
      options.startTimeoutMs ?? 90_000,
      'lattice orchestrator to print its addresses',
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }

  const stop = async (timeoutMs = 15_000): Promise<number | null> => {
    if (!exit) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    }
    return exit!.code;
  };
  const metric = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
    const body = await (await fetch(`${opsUrl}/metrics`)).text();
    let total = 0;
    for (const line of body.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      const match = /^[^{\s]+(?:\{(.*)\})?\s+(\S+)/.exec(line);
      if (!match) continue;
      const text = match[1] ?? '';
      if (Object.entries(labels).every(([k, v]) => text.includes(`${k}="${v}"`))) total += Number(match[2]);
    }
    return total;
  };
  return {
    address: address!,
    opsUrl: opsUrl!,
    child,
    output: () => output,
    exited: () => exit,
    stop,
    metric,
  };
}

// --- Independent expectations -------------------------------------------------------------------

const f = Math.fround;

function row(rows: readonly FeatureRowInput[], key: string[]): FeatureRowInput | undefined {
  return rows.find((r) => r.key.join('|') === key.join('|'));
}

export interface ExpectedCatalogScore {
  ctr: number;
  final: number;
  price: number;
  ctr7d: number;
  categoryId: number;
  popularity: number;
  /** The user × category row is absent: clicks default to 0 and the row carries an error. */
  missingUserCategory: boolean;
  /** The user's clicks in the item's category (0 when the row is absent). */
  clicks: number;
}

/** The catalog ranker's ctr and final score for a user and a catalog item, from the raw demo data (as test/e2e/catalog-ranker.test.ts). */
export function expectedCatalogScore(
  servers: Pick<ReferenceServers, 'data' | 'weights' | 'bias'>,
  userId: string,
  catalogId: string,
): ExpectedCatalogScore {
  const rows = servers.data.rows;
  const user = row(rows.user, [userId])!.values.profile!;
  const catalog = row(rows.catalog, [catalogId])!.values;
  const categoryId = String(catalog.attributes!.category_id);
  const popularity = Number(row(rows.category, [categoryId])!.values.stats!.popularity);
  const uc = row(rows.user_category, [userId, categoryId]);
  const clicks = uc ? Number(uc.values.agg!.clicks_30d) : 0;
  const x = [
    ...(user.embedding as number[]),
    Number(user.age),
    Number(catalog.stats!.price),
    Number(catalog.stats!.ctr_7d),
    popularity,
    clicks,
  ].map(f);
  let logit = 0;
  x.forEach((v, i) => {
    logit += servers.weights[i]! * v;
  });
  const ctr = f(1 / (1 + Math.exp(-(logit + servers.bias))));
  const final = f(f(ctr * 0.9) + f(f(popularity) * 0.1));
  return {
    ctr,
    final,
    price: f(Number(catalog.stats!.price)),
    ctr7d: f(Number(catalog.stats!.ctr_7d)),
    categoryId: Number(categoryId),
    popularity: f(popularity),
    missingUserCategory: uc === undefined,
    clicks: f(clicks),
  };
}

// --- A pair/slate model the tests can score independently ---------------------------------------

export const DUO_ID = 'duo';
export const DUO_MODEL = 'duo_scorer';
/** score = sigmoid(0.5·price − 0.25·quality + 0.1), on FP32 inputs. */
export const DUO_WEIGHTS = [0.5, -0.25] as const;
export const DUO_BIAS = 0.1;

/** Writes the duo scorer (a 2-feature logistic model) into a model repository. */
export function writeDuoModel(repository: string): void {
  const model = logisticRanker({ features: 2, weights: DUO_WEIGHTS, bias: DUO_BIAS });
  writeModel(repository, DUO_MODEL, 1, model.bytes);
}

/** The duo model's per-target score (`p`), computed here in float32 as the ONNX runtime does. */
export function duoScore(price: number, quality: number): number {
  const logit = f(f(f(f(price) * f(DUO_WEIGHTS[0])) + f(f(quality) * f(DUO_WEIGHTS[1]))) + f(DUO_BIAS));
  return f(1 / (1 + Math.exp(-logit)));
}

/**
 * Per target: `p` = the duo model over the target's `price` and `quality`. Per pair or slate:
 * `lead` = the duo model run on the slate's rows (slate mode: the first row's score), and
 * `slate_score` = `weight × 10 + lead` (a slate-mode compute over the slate's own input `weight`).
 */
export function duoConfig(modelServer: string, id = DUO_ID): ModelConfigInput {
  const input = { name: 'features', data_type: 'FP32', shape: [2], features: ['price', 'quality'] };
  return {
    model_config_id: id,
    target_id_column: 'item_id',
    component_dependency: { scorer: [], lead: ['slate_blend'], slate_blend: [] },
    model_serving_components: [
      {
        name: 'scorer',
        model_name: DUO_MODEL,
        deadline_ms: 2000,
        endpoints: [{ target: modelServer, percentage: 100 }],
        inputs: [input],
        outputs: [{ name: 'score', data_type: 'FP32', columns: ['p'] }],
      },
      {
        name: 'lead',
        model_name: DUO_MODEL,
        deadline_ms: 2000,
        slate: true,
        endpoints: [{ target: modelServer, percentage: 100 }],
        inputs: [input],
        outputs: [{ name: 'score', data_type: 'FP32', columns: ['lead'] }],
      },
    ],
    compute_components: [
      {
        name: 'slate_blend',
        expression: 'w 10 * lead +',
        score_mapping: { w: 'weight', lead: 'lead' },
        output_column: 'slate_score',
        data_type: 'FP64',
        slate: true,
      },
    ],
    request_features: ['price', 'quality', 'weight'],
    response: { columns: ['p', 'lead', 'slate_score'] },
  };
}
