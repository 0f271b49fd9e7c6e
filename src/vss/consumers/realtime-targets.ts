/**
 * Where a real-time update of an entity must land: the entity's store (its aggregator and
 * embeddings tables) and, for every model of the entity, the collections of the versions its
 * variants use, with the variants using each. Read from SQL for every batch, so a reset that starts
 * or a read version that flips is seen by the next batch; real-time updates are never paused.
 *
 * A variant uses its read version and, while a reset runs, its newer write version too: from the
 * moment the write version is created until it is flipped to, so that an update made while the new
 * version is ingested (or indexed) is not lost when it starts serving. After a flip, the version it
 * read before is kept current too while it is kept for a rollback (RETIRED within its grace period,
 * the variant's `previous_read_version`), so a rollback serves it with today's attributes. Versions
 * that failed, or were retired with nothing to roll back to them, are left alone; their collections
 * are dropped or about to be.
 */
import type { Logger } from '../../platform/logging/index.js';
import {
  compileMembership,
  type MembershipRule,
  promotingVariants,
  variantCollections,
} from '../model/index.js';
import type { Cluster, Model, Store, Variant, VersionStatus, VssRepositories } from '../store/index.js';

/** A variant writing into one collection, with its compiled `vss_filter`. */
export interface VariantUse {
  readonly variant: string;
  /** Undefined when the stored filter does not compile: the flag is then left as it is. */
  readonly rule: MembershipRule | undefined;
}

/** One model version's collection on a cluster's vector DB, and the variants that read or write it there. */
export interface CollectionTarget {
  readonly modelName: string;
  readonly version: number;
  /** Default experiment. A variant being promoted uses its version on production too. */
  readonly cluster?: Cluster;
  readonly variants: readonly VariantUse[];
}

export interface EntityTargets {
  readonly store: Store;
  readonly collections: readonly CollectionTarget[];
}

/** Versions whose collection may still be read or flipped to (a FAILED one, once its operation is retried). */
const LIVE_VERSIONS: ReadonlySet<VersionStatus> = new Set(['INGESTING', 'INGESTED', 'SERVING', 'FAILED']);

/** The versions a variant's updates go to: its read version, and its write version while newer. */
export function versionsOf(variant: Pick<Variant, 'readVersion' | 'writeVersion'>): number[] {
  const versions: number[] = [];
  if (variant.readVersion !== null) versions.push(variant.readVersion);
  if (
    variant.writeVersion !== null &&
    (variant.readVersion === null || variant.writeVersion > variant.readVersion)
  ) {
    versions.push(variant.writeVersion);
  }
  return versions;
}

/** Compiled rules by the filter's JSON text: filters rarely change, batches come often. */
const rules = new Map<string, MembershipRule | undefined>();
const MAX_CACHED_RULES = 10_000;

function ruleOf(variant: Variant, logger: Logger | undefined): MembershipRule | undefined {
  const text = JSON.stringify(variant.vssFilter);
  if (rules.has(text)) return rules.get(text);
  let rule: MembershipRule | undefined;
  try {
    rule = compileMembership(variant.vssFilter);
  } catch (err) {
    // Admin validates filters when a variant registers; a stored one that does not compile is a
    // configuration fault that no retry of this event can fix, so membership is left unchanged.
    logger?.warn(
      { entity: variant.entity, model: variant.modelName, variant: variant.variant, err },
      'vss real-time: the variant vss_filter does not compile; its membership flags are left unchanged',
    );
  }
  if (rules.size >= MAX_CACHED_RULES) rules.clear();
  rules.set(text, rule);
  return rule;
}

/** The entity's targets; undefined when the entity has no store. */
export async function loadEntityTargets(
  repositories: VssRepositories,
  entity: string,
  logger?: Logger,
): Promise<EntityTargets | undefined> {
  const store = await repositories.stores.findByEntity(entity);
  if (store === undefined) return undefined;
  const models = await repositories.models.list({ entity });
  const collections: CollectionTarget[] = [];
  await Promise.all(
    models.map(async (model: Model) => {
      const key = { entity, modelName: model.modelName };
      const [variants, versions, operations] = await Promise.all([
        repositories.variants.list(key),
        repositories.versions.list(key),
        repositories.operations.list({ ...key, unfinished: true, limit: 100 }),
      ]);
      const previous = new Set(
        variants.flatMap((v) => (v.previousReadVersion === null ? [] : [v.previousReadVersion])),
      );
      const live = new Set(
        versions
          .filter((v) => LIVE_VERSIONS.has(v.status) || (v.status === 'RETIRED' && previous.has(v.version)))
          .map((v) => v.version),
      );
      const promoting = promotingVariants(operations);
      const byPlace = new Map<string, { cluster: Cluster; version: number; uses: VariantUse[] }>();
      for (const variant of variants) {
        const use: VariantUse = { variant: variant.variant, rule: ruleOf(variant, logger) };
        const own = new Set(versionsOf(variant));
        const places = variantCollections(variant, promoting.get(variant.variant));
        if (variant.previousReadVersion !== null) {
          own.add(variant.previousReadVersion);
          places.push({ cluster: variant.cluster, version: variant.previousReadVersion });
        }
        for (const { cluster, version } of places) {
          if (!live.has(version) || (cluster === variant.cluster && !own.has(version))) continue;
          const place = `${cluster}/${version}`;
          const entry = byPlace.get(place);
          if (entry === undefined) byPlace.set(place, { cluster, version, uses: [use] });
          else if (!entry.uses.includes(use)) entry.uses.push(use);
        }
      }
      for (const { cluster, version, uses } of byPlace.values()) {
        collections.push({ modelName: model.modelName, version, cluster, variants: uses });
      }
    }),
  );
  collections.sort((a, b) =>
    a.modelName !== b.modelName
      ? a.modelName < b.modelName
        ? -1
        : 1
      : a.version !== b.version
        ? a.version - b.version
        : (a.cluster ?? '') < (b.cluster ?? '')
          ? -1
          : 1,
  );
  return { store, collections };
}
