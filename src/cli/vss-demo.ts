/**
 * The vss demo that `lattice up` onboards on a fresh data directory, through the real admin flow a
 * user would follow (register → reset → ingest → index → READY, over the admin HTTP API of this
 * process): 1,000 generated product embeddings (32-d, COSINE) with attributes `category`, `brand`
 * and `price`, as JSON Lines under `<dataDir>/demo/products/`, and two variants: `all` and `shoes`
 * (category = shoes). A data directory where the demo was onboarded is left as it is, so a second
 * start is up at once; one where a killed first start left it unfinished is finished.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_CATALOGS } from '../featurestore/demo-data.js';
import { isLatticeError } from '../platform/errors.js';
import { seededRandom } from '../platform/random.js';
import type { AdminClient } from './vss-admin/index.js';

export const VSS_DEMO = {
  entity: 'catalog',
  model: 'products',
  /** One product per catalog of the feature store's demo data, with its id (`c1`…): retrieval then ranking line up. */
  rows: DEMO_CATALOGS,
  dimension: 32,
  categories: ['shoes', 'books', 'games', 'garden', 'kitchen'],
  brands: ['acme', 'globex', 'initech', 'umbrella'],
} as const;

/** Writes the training data: clustered by category (so neighbours make sense), seeded, rounded. */
export function writeVssDemoData(dir: string): string {
  const { rows, dimension, categories, brands } = VSS_DEMO;
  const next = seededRandom(42);
  const centres = categories.map(() => Array.from({ length: dimension }, () => next() * 2 - 1));
  const lines: string[] = [];
  for (let i = 0; i < rows; i++) {
    const c = i % categories.length;
    const embedding = centres[c]!.map((x) => Number((x + (next() - 0.5) * 0.8).toFixed(5)));
    lines.push(
      JSON.stringify({
        product_id: `c${i + 1}`,
        embedding,
        indexed: true,
        category: categories[c],
        brand: brands[i % brands.length],
        price: Math.round(next() * 10_000) / 100,
      }),
    );
  }
  mkdirSync(dir, { recursive: true });
  // Written beside and renamed, so a crash never leaves a short file the model is registered with
  // (the dot keeps a left-over out of the job, which skips such names).
  const path = join(dir, 'part-0.jsonl');
  const temporary = join(dir, '.part-0.jsonl.tmp');
  writeFileSync(temporary, `${lines.join('\n')}\n`);
  renameSync(temporary, path);
  return dir;
}

/** The Idempotency-Key of the demo's reset: a start after a crash gets the operation the first one submitted. */
const DEMO_RESET_KEY = 'lattice-up-vss-demo-reset';

const DEMO_VARIANTS = [
  ['all', []],
  ['shoes', [{ column_name: 'category', filter_value: 'shoes', default_value: '' }]],
] as const;

interface DemoModelState {
  variants: { variant: string; read_version: number | null }[];
}

/**
 * Onboards the demo model through the admin API unless it was onboarded already (a variant of it
 * serves a version); reports progress through `say` and resolves once both variants are READY (or
 * throws with the operation's error). Returns false when there was nothing to do.
 *
 * Every step can be repeated, so a start after a crash at any point of a first start's onboarding
 * finishes it: registrations with the same body answer the same resource, the reset is submitted
 * with an Idempotency-Key (the repeat answers the operation the killed process submitted, which the
 * admin engine resumes by itself), and the training data is written only before the model exists
 * (rewriting it would change the files the reset's job is reading).
 */
export async function onboardVssDemo(
  admin: AdminClient,
  dataDir: string,
  say: (line: string) => void,
  pollMs = 250,
): Promise<boolean> {
  const { entity, model, dimension } = VSS_DEMO;
  let existing: DemoModelState | undefined;
  try {
    existing = (await admin.get(`/models/${entity}/${model}`)) as DemoModelState;
  } catch (err) {
    if (!isLatticeError(err, 'NOT_FOUND')) throw err;
  }
  if (existing?.variants.some((v) => v.read_version !== null)) return false;
  const training = join(dataDir, 'demo', model);
  if (existing === undefined) writeVssDemoData(training);
  else say('Resuming the vss demo onboarding that a previous start left unfinished');
  await admin.post('/register-store', {
    store_id: 1,
    entity,
    db_conf_id: 'embedded',
    embeddings_table: `${entity}_embeddings`,
    aggregator_table: `${entity}_attributes`,
  });
  await admin.post('/register-model', {
    entity,
    model_name: model,
    ingestion_column_mapping: {
      id_column: 'product_id',
      embedding_column: 'embedding',
      to_be_indexed_column: 'indexed',
    },
    embedding_store_enabled: true,
    embedding_store_ttl: 0,
    mq_id: 1,
    model_config: { distance_function: 'COSINE', vector_dimension: dimension },
    store_id: 1,
    training_data_path: training,
  });
  for (const [variant, criteria] of DEMO_VARIANTS) {
    await admin.post('/register-variant', {
      entity,
      model_name: model,
      variant,
      vss_filter: { criteria },
      vectordb_type: 'EMBEDDED',
      vectordb_config: {},
      job_frequency: 'FREQ_1W',
    });
  }
  const reset = (await submitReset(admin, pollMs)) as { operation_id: string };
  const id = reset.operation_id;
  say(
    `Onboarding the vss demo (${VSS_DEMO.rows} products, ${dimension}-d) through the admin API: operation ${id}`,
  );
  let shown = '';
  for (;;) {
    const op = (await admin.get(`/operations/${id}`)) as Record<string, unknown>;
    const line = `  ${String(op.step ?? 'queued')} ${Math.round(Number(op.progress ?? 0) * 100)}%`;
    if (line !== shown) {
      say(line);
      shown = line;
    }
    if (op.status === 'SUCCEEDED') return true;
    if (op.status === 'FAILED') throw new Error(`demo onboarding failed: ${String(op.last_error)}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/**
 * POST /reset-model under the demo's Idempotency-Key. ABORTED means the process that submitted it
 * first died before answering: the admin API takes that reservation over after its lease.
 */
async function submitReset(admin: AdminClient, pollMs: number): Promise<unknown> {
  const { entity, model } = VSS_DEMO;
  for (;;) {
    try {
      return await admin.post(
        '/reset-model',
        { entity, model_name: model },
        { idempotencyKey: DEMO_RESET_KEY },
      );
    } catch (err) {
      if (!isLatticeError(err, 'ABORTED')) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
