import { seededRandom } from '../platform/random.js';
import { type FeatureRowInput, writeFeatureRows } from './entity-rows.js';
import { FeatureRegistry, type RegistryDocument } from './registry.js';
import type { FeatureStore } from './store.js';

/**
 * A seeded demo data set for tests, benchmarks and the demo: the entities the example model
 * configuration reads (user, catalog, category, user × category). The same seed and sizes always give
 * the same rows; each entity draws from its own stream, so resizing one leaves the others unchanged.
 */
export type DemoEntity = 'user' | 'catalog' | 'category' | 'user_category';

export interface DemoDataOptions {
  /** Default 42. */
  seed?: number;
  /** Users `u1`…`uN` (default 100). */
  users?: number;
  /** Catalog items `c1`…`cN` (default 1000). */
  catalogs?: number;
  /** Categories `0`…`N-1` (numeric ids, since catalog:attributes:category_id is an INT32; default 20). */
  categories?: number;
  /**
   * Categories each user has a user_category row for (default all of them, so every seeded
   * (user, catalog) pair the example ranker scores finds its row; at most `categories`).
   */
  categoriesPerUser?: number;
}

export interface DemoData {
  registry: FeatureRegistry;
  rows: Record<DemoEntity, FeatureRowInput[]>;
}

const DEMO_REGISTRY: RegistryDocument = {
  entities: [
    {
      name: 'user',
      keys: ['user_id'],
      feature_groups: [
        {
          name: 'profile',
          features: [
            { name: 'age', data_type: 'FP32', default: 30 },
            { name: 'country', data_type: 'STRING', default: 'UNKNOWN' },
            { name: 'embedding', data_type: 'FP32_VECTOR', vector_dim: 8 },
          ],
        },
      ],
    },
    {
      name: 'catalog',
      keys: ['catalog_id'],
      feature_groups: [
        {
          name: 'stats',
          features: [
            { name: 'price', data_type: 'FP32' },
            { name: 'ctr_7d', data_type: 'FP32', default: 0.01 },
          ],
        },
        { name: 'attributes', features: [{ name: 'category_id', data_type: 'INT32', default: -1 }] },
      ],
    },
    {
      name: 'category',
      keys: ['category_id'],
      feature_groups: [{ name: 'stats', features: [{ name: 'popularity', data_type: 'FP32' }] }],
    },
    {
      name: 'user_category',
      keys: ['user_id', 'category_id'],
      feature_groups: [{ name: 'agg', features: [{ name: 'clicks_30d', data_type: 'FP32' }] }],
    },
  ],
};

/** The demo registry as a document (a fresh copy), e.g. to write it to a file. */
export function demoRegistryDocument(): RegistryDocument {
  return structuredClone(DEMO_REGISTRY);
}

export function demoRegistry(): FeatureRegistry {
  return FeatureRegistry.fromDocument(DEMO_REGISTRY, 'demo feature registry');
}

export { seededRandom } from '../platform/random.js';

/** Catalogs `c1`…`c1000` by default: the vss demo's products carry the same ids (src/cli/vss-demo.ts). */
export const DEMO_CATALOGS = 1000;

const COUNTRIES = ['IN', 'US', 'BR', 'DE', 'JP', 'ID', 'GB', 'FR', 'NG', 'MX'];
const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

export function generateDemoData(options: DemoDataOptions = {}): DemoData {
  const seed = options.seed ?? 42;
  const users = wholeNumber(options.users ?? 100, 'users');
  const catalogs = wholeNumber(options.catalogs ?? DEMO_CATALOGS, 'catalogs');
  const categories = wholeNumber(options.categories ?? 20, 'categories');
  const perUser = Math.min(
    wholeNumber(options.categoriesPerUser ?? categories, 'categoriesPerUser'),
    categories,
  );
  // One stream per entity: seed × a distinct odd constant.
  const stream = (salt: number) => seededRandom(Math.imul(seed ^ salt, 0x2c1b3c6d) ^ salt);

  const userRandom = stream(0x1001);
  const user = Array.from({ length: users }, (_, i): FeatureRowInput => {
    const raw = Array.from({ length: 8 }, () => userRandom() * 2 - 1);
    const norm = Math.hypot(...raw) || 1;
    return {
      key: [`u${i + 1}`],
      values: {
        profile: {
          age: 18 + Math.floor(userRandom() * 63),
          country: COUNTRIES[Math.floor(userRandom() * COUNTRIES.length)]!,
          embedding: raw.map((x) => round(x / norm, 4)),
        },
      },
    };
  });

  const catalogRandom = stream(0x2003);
  const catalog = Array.from(
    { length: catalogs },
    (_, i): FeatureRowInput => ({
      key: [`c${i + 1}`],
      values: {
        stats: { price: round(1 + catalogRandom() * 499, 2), ctr_7d: round(catalogRandom() * 0.2, 4) },
        attributes: { category_id: categories === 0 ? -1 : Math.floor(catalogRandom() * categories) },
      },
    }),
  );

  const categoryRandom = stream(0x3005);
  const category = Array.from(
    { length: categories },
    (_, i): FeatureRowInput => ({
      key: [String(i)],
      values: { stats: { popularity: round(categoryRandom(), 4) } },
    }),
  );

  const pairRandom = stream(0x4007);
  const userCategory: FeatureRowInput[] = [];
  for (let u = 0; u < users; u++) {
    // A partial Fisher–Yates shuffle picks `perUser` distinct categories.
    const ids = Array.from({ length: categories }, (_, i) => i);
    for (let k = 0; k < perUser; k++) {
      const j = k + Math.floor(pairRandom() * (categories - k));
      [ids[k], ids[j]] = [ids[j]!, ids[k]!];
      userCategory.push({
        key: [`u${u + 1}`, String(ids[k])],
        values: { agg: { clicks_30d: Math.floor(pairRandom() * 50) } },
      });
    }
  }

  return { registry: demoRegistry(), rows: { user, catalog, category, user_category: userCategory } };
}

/** Generates the demo data and writes every entity's rows to `store`, in batches. */
export async function seedDemoData(store: FeatureStore, options: DemoDataOptions = {}): Promise<DemoData> {
  const data = generateDemoData(options);
  for (const [entity, rows] of Object.entries(data.rows)) {
    for (let i = 0; i < rows.length; i += 1000) {
      await writeFeatureRows(store, data.registry, entity, rows.slice(i, i + 1000));
    }
  }
  return data;
}

/**
 * Rows as flat records with the loader's column names (key parts, then `group:feature`), e.g. to
 * write demo CSV, JSON Lines or Parquet files.
 */
export function toColumnRecords(
  registry: FeatureRegistry,
  entityName: string,
  rows: readonly FeatureRowInput[],
): { columns: string[]; records: Record<string, unknown>[] } {
  const entity = registry.requireEntity(entityName);
  const columns = [
    ...entity.keys,
    ...entity.groups.flatMap((group) => group.features.map((feature) => `${group.name}:${feature.name}`)),
  ];
  const records = rows.map((row) => {
    const record: Record<string, unknown> = {};
    entity.keys.forEach((key, i) => {
      record[key] = row.key[i];
    });
    for (const [group, features] of Object.entries(row.values)) {
      for (const [feature, value] of Object.entries(features)) record[`${group}:${feature}`] = value;
    }
    return record;
  });
  return { columns, records };
}

function wholeNumber(value: number, name: string): number {
  if (!(Number.isInteger(value) && value >= 0))
    throw new RangeError(`${name} must be a whole number ≥ 0, got ${value}`);
  return value;
}
