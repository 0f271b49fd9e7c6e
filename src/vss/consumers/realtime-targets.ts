/**
 * Where a real-time update of an entity must land: the entity's store (its aggregator and
 * embeddings tables) and, for every model of the entity, the collections of the versions its
 * variants use, with the variants using each. Read from SQL for every batch, so a reset that starts
 * or a read version that flips is seen by the next batch; real-time updates are never paused.
 *
 * A variant uses its read version and, while a reset runs, its newer write version too: from the
 * moment the write version is created until it is flipped to, so that an update made while the new
 * version is ingested (or indexed) is not lost when it starts serving. Versions that failed or were
 * retired are left alone; their collections are dropped or about to be.
 */
import type { Logger } from '../../platform/logging/index.js';
import { compileMembership, type MembershipRule } from '../model/index.js';
import type { Model, Store, Variant, VersionStatus, VssRepositories } from '../store/index.js';

/** A variant writing into one collection, with its compiled `vss_filter`. */
export interface VariantUse {
  readonly variant: string;
  /** Undefined when the stored filter does not compile: the flag is then left as it is. */
  readonly rule: MembershipRule | undefined;
}

/** One model version's collection and the variants that read or write it. */
export interface CollectionTarget {
  readonly modelName: string;
  readonly version: number;
  readonly variants: readonly VariantUse[];
}

export interface EntityTargets {
  readonly store: Store;
  readonly collections: readonly CollectionTarget[];
}

/** Versions whose collection may still be read or flipped to. */
const LIVE_VERSIONS: ReadonlySet<VersionStatus> = new Set(['INGESTING', 'INGESTED', 'SERVING']);

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
      const [variants, versions] = await Promise.all([
        repositories.variants.list(key),
        repositories.versions.list(key),
      ]);
      const live = new Set(versions.filter((v) => LIVE_VERSIONS.has(v.status)).map((v) => v.version));
      const byVersion = new Map<number, VariantUse[]>();
      for (const variant of variants) {
        const use: VariantUse = { variant: variant.variant, rule: ruleOf(variant, logger) };
        for (const version of versionsOf(variant)) {
          if (!live.has(version)) continue;
          const uses = byVersion.get(version);
          if (uses === undefined) byVersion.set(version, [use]);
          else uses.push(use);
        }
      }
      for (const [version, uses] of byVersion) {
        collections.push({ modelName: model.modelName, version, variants: uses });
      }
    }),
  );
  collections.sort((a, b) =>
    a.modelName === b.modelName ? a.version - b.version : a.modelName < b.modelName ? -1 : 1,
  );
  return { store, collections };
}
