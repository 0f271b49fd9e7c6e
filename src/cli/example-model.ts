/**
 * The example model `lattice up` seeds (the catalog ranker, catalog-ranker.ts): its ONNX models in
 * the model repository, its config and blend expression in the config store.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { writeDemoModels } from '../modelserver/index.js';
import type { Platform } from '../platform/platform.js';
import type { Settings } from '../platform/settings/index.js';
import {
  BLEND_COMPUTE_ID,
  BLEND_EXPRESSION,
  CATALOG_RANKER_ID,
  CATALOG_RANKER_MODEL,
  CATALOG_RECOMMENDER_ID,
  catalogRankerConfig,
  catalogRecommenderConfig,
  writeCatalogRankerModel,
} from './catalog-ranker.js';

/** Writes the demo models and the catalog ranker's into a repository that has no catalog ranker yet. */
export function writeExampleModels(repository: string): void {
  if (existsSync(join(repository, CATALOG_RANKER_MODEL))) return;
  writeDemoModels(repository);
  writeCatalogRankerModel(repository);
}

/**
 * Whether `lattice up` seeds the example model: into the embedded (file) config store, which is this
 * machine's own, whenever it has no models; into a shared one (etcd) only when asked (`--seed-demo`),
 * since other deployments read it.
 */
export function shouldSeedExampleModel(
  settings: Pick<Settings, 'configStore'>,
  flags: { seedDemo?: boolean } = {},
): boolean {
  return flags.seedDemo === true || settings.configStore.kind === 'file';
}

/**
 * On a store that has none, writes the example catalog ranker (config and blend expression) pointing
 * at this stack's model and compute servers, so a fresh `npm start` answers real requests.
 */
export async function seedExampleModel(
  platform: Platform,
  targets: { modelServer: string; computeServer: string },
): Promise<boolean> {
  const store = await platform.configStore();
  if ((await store.list('models/')).length > 0) return false;
  await store.put(`compute/${BLEND_COMPUTE_ID}`, { expression: BLEND_EXPRESSION });
  await store.put(`models/${CATALOG_RANKER_ID}`, catalogRankerConfig(targets));
  return true;
}

/**
 * With the example ranker just seeded, the retrieve-and-rank example beside it (catalog-ranker.ts,
 * `catalog_recommender`): written once vss serves, since it names vss's address.
 */
export async function seedRecommenderModel(
  platform: Platform,
  targets: { modelServer: string; computeServer: string; vss: string },
): Promise<void> {
  const store = await platform.configStore();
  await store.put(`models/${CATALOG_RECOMMENDER_ID}`, catalogRecommenderConfig(targets));
}
