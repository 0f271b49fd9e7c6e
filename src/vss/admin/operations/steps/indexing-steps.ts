/**
 * The steps after ingestion that resets, triggers and fills share: waiting until the version's
 * collections are indexed (indexed vectors ≥ 95 % of the points, vss.md), flipping the variants'
 * read version (all of them in one transaction, so no reader sees some variants flipped and others
 * not), and dropping what the flip retired: the previous version's collections (on every vector DB
 * this admin reaches; "drop if present") and, in the transaction that marks the version DROPPED,
 * its embedding-store rows and ingestion ledger.
 */
import { isLatticeError, LatticeError } from '../../../../platform/errors.js';
import { collectionName } from '../../../model/index.js';
import type { ModelVersion, Variant } from '../../../store/index.js';
import { type StepContext, type StepDefinition, type StepEffect, StepFailure } from '../step-registry.js';
import { loadTargets, operationVersion, variantKey } from './operation-targets.js';

/**
 * Indexed share of each vector DB's collection of the version, and the lowest (`ratio`, `indexed`,
 * `points`); `held` is the collection holding the most points (where the consumers write: another
 * DB's collection may still be empty), measured in the same look.
 */
export async function measureIndexing(
  ctx: StepContext,
  variants: readonly Variant[],
  version: number,
): Promise<{ ratio: number; indexed: number; points: number; held: { points: number; indexed: number } }> {
  const { operation, services } = ctx;
  const name = collectionName(operation.entity, operation.modelName, version);
  let lowest = { ratio: 1, indexed: 0, points: 0 };
  let held = { points: 0, indexed: 0 };
  for (const [type, group] of services.vectorDbs.byType(variants)) {
    let info: { points: number; indexedPoints: number };
    try {
      info = await services.vectorDbs.get(type).collectionInfo(name);
    } catch (err) {
      if (!isLatticeError(err, 'NOT_FOUND')) throw err;
      throw new StepFailure(`collection ${name} is missing on the ${type} vector database`, { cause: err });
    }
    // An empty version is fully indexed: there is nothing to wait for.
    const ratio = info.points === 0 ? 1 : info.indexedPoints / info.points;
    for (const variant of group) services.metrics.indexingRatio(variant, ratio);
    if (ratio <= lowest.ratio) lowest = { ratio, indexed: info.indexedPoints, points: info.points };
    if (info.points >= held.points) held = { points: info.points, indexed: info.indexedPoints };
  }
  return { ...lowest, held };
}

/**
 * Waits for indexing of the version on every vector DB the operation's variants use, then records
 * the version's counts from one look at its collection: the candidates it holds (`ingested_count`:
 * a delta that replaces candidates adds none) and those indexed. `next` undefined: the operation
 * succeeds then.
 */
export function waitIndexedStep(
  name: string,
  next: string | undefined,
  from: number,
  to: number,
): StepDefinition {
  return {
    name,
    async run(ctx) {
      const { variants } = await loadTargets(ctx.services.store, ctx.operation);
      const version = operationVersion(ctx.operation);
      const measured = await measureIndexing(ctx, variants, version);
      const threshold = ctx.services.indexedThreshold;
      if (measured.ratio < threshold) {
        return ctx.wait(from + (to - from) * (measured.ratio / threshold), {
          indexing: { indexed: measured.indexed, points: measured.points },
        });
      }
      const effect: StepEffect = async (repositories, operation) => {
        await repositories.versions.setHeldCounts(
          { entity: operation.entity, modelName: operation.modelName, version },
          measured.held,
        );
      };
      return next === undefined ? ctx.succeed(undefined, effect) : ctx.advance(next, to, effect);
    },
  };
}

/**
 * Flips every variant of the operation to the version, in one transaction with the step's move.
 * `next` undefined: the operation succeeds with the flip.
 */
export function flipStep(name: string, next: string | undefined, progress: number): StepDefinition {
  return {
    name,
    async run(ctx) {
      const version = operationVersion(ctx.operation);
      const effect: StepEffect = async (repositories, operation) => {
        const previous: Record<string, number | null> = {};
        for (const variant of (await loadTargets(repositories, operation)).variants) {
          const flip = await repositories.flipReadVersion(variantKey(operation, variant.variant), version);
          if (!flip.applied) {
            const now = await repositories.variants.get(variant);
            throw new LatticeError(
              'FAILED_PRECONDITION',
              `variant ${variant.variant} is ${now.state} on write version ${now.writeVersion ?? 'none'}, not INDEXING version ${version}: it cannot be flipped`,
            );
          }
          previous[variant.variant] = flip.previousReadVersion;
        }
        await repositories.operations.setResult(operation.operationId, {
          ...operation.result,
          previous_read_versions: previous,
        });
      };
      return next === undefined ? ctx.succeed(undefined, effect) : ctx.advance(next, progress, effect);
    },
  };
}

/**
 * Drops every RETIRED version of the model (no variant reads or writes it), and every FAILED one a
 * newer served version superseded (its operation can no longer be retried: superseded.ts): their
 * collections on each reachable vector DB first (idempotent), then in one transaction with the
 * operation's success the version becomes DROPPED and its embedding rows and ingestion ledger are
 * deleted.
 */
/** FAILED versions older than every version the model's variants serve, that none of them writes. */
function supersededFailures(versions: readonly ModelVersion[], variants: readonly Variant[]): ModelVersion[] {
  const served = variants.map((v) => v.readVersion);
  if (served.length === 0 || served.some((v) => v === null)) return [];
  const oldest = Math.min(...(served as number[]));
  const written = new Set(variants.map((v) => v.writeVersion));
  return versions.filter((v) => v.status === 'FAILED' && v.version < oldest && !written.has(v.version));
}

/** How long a version no variant reads any more is kept at least (page walks still on it), ms. */
export const RETIRED_GRACE_MS = 5_000;

export function dropRetiredStep(name: string): StepDefinition {
  return {
    name,
    async run(ctx) {
      const { services, operation } = ctx;
      const versions = await services.store.versions.list(operation);
      const all = versions.filter((v) => v.status === 'RETIRED');
      const now = Date.now();
      const age = (v: ModelVersion) =>
        v.retiredAt === null ? Number.POSITIVE_INFINITY : now - v.retiredAt.getTime();
      const graceMs = services.rollbackGraceMs ?? 0;
      let retired = all;
      let kept: ModelVersion[] = [];
      if (graceMs <= RETIRED_GRACE_MS) {
        // Page walks started on a version just before its flip still read it: keep it a little longer.
        if (all.some((v) => age(v) < RETIRED_GRACE_MS)) return ctx.wait();
      } else {
        // With a rollback grace period, retired versions are the engine's sweep's to drop once it is
        // over (retired-versions.ts: judged under the version's row lock by the database's clock, as
        // rollback-model judges it, so the two cannot both act on one version).
        retired = [];
        kept = all;
      }
      const superseded = supersededFailures(versions, await services.store.variants.list(operation));
      for (const version of [...retired, ...superseded]) {
        for (const type of services.vectorDbs.types()) {
          await ctx.heartbeat();
          await services.vectorDbs.dropCollection(operation, version.version, type);
        }
      }
      const dropped = retired.map((v) => v.version);
      const failed = superseded.map((v) => v.version);
      const result = {
        dropped_versions: [...dropped, ...failed],
        ...(kept.length === 0 ? {} : { kept_versions: kept.map((v) => v.version) }),
      };
      return ctx.succeed(result, async (repositories, op) => {
        const model = await repositories.models.get(op);
        const store = await repositories.stores.get(model.storeId);
        for (const version of [...dropped, ...failed]) {
          const key = { entity: op.entity, modelName: op.modelName, version };
          const from = dropped.includes(version) ? 'RETIRED' : 'FAILED';
          if (!(await repositories.versions.transition(key, from, 'DROPPED'))) continue;
          await repositories.embeddings.dropVersion(store.embeddingsTable, op.modelName, version);
          await repositories.ingestion.forgetVersion(key);
        }
      });
    },
  };
}
