/**
 * The steps PROMOTE_VARIANT and PROMOTE_MODEL share: moving variants from the experiment cluster to
 * the production cluster's vector DB (vss.md "Concepts"; model/cluster-vector-dbs.ts), without a
 * moment in which serving finds nothing:
 *
 *   prepare → await_writers → copy → indexing → switch → drop_experiment
 *
 * - prepare: the variants to move (READY on one read version, no reset under way: checked when the
 *   promotion was accepted and again here) and the version's collection on production (HNSW from
 *   their `vectordb_config`); commits `promoting: {version, variants}` into the operation's result,
 *   which the consumers read: from then on they write those variants' points to production too.
 * - await_writers: waits until every consumer has read that (`promoteSettleMs` after prepare; the
 *   consumers re-read a model's registration every `catalogTtlMs`, 5 s by default).
 * - copy: every live embedding-store row of the version, a page at a time in id order, becomes a
 *   production point built as the consumers build one (model/point-payload.ts): the vector from
 *   the store, the attributes of the experiment point (it holds the event payload, which the store
 *   does not keep) over the aggregator row, the membership flags of every variant on production
 *   using the version. After each page the aggregator rows are read again and changed ones
 *   rewritten (consumers/aggregator-recheck.ts), and the store rows again: ids deleted meanwhile are
 *   deleted from production. The page cursor is recorded after each page, so a restart resumes there
 *   (every write is an upsert or delete by id: a page copied twice is copied once).
 * - indexing: until the production collection reports indexed ≥ 95 % of its points.
 * - switch: in one transaction with the step's move, each variant's `cluster` becomes production
 *   (compare-and-set: still READY on the copied version, no reset under way) — and the model's, for
 *   PROMOTE_MODEL — and `promoting` is cleared. The variants table's trigger notifies serving
 *   (VSS_CONFIG_CHANNEL), which searches production from its next configuration reload.
 * - drop_experiment: once consumers and serving have had `promoteSettleMs` to see the switch, the
 *   experiment collection of the version is dropped if no experiment variant on that vector DB
 *   reads or writes it any more.
 *
 * A promotion is refused (FAILED_PRECONDITION, the API's 409) while the model has a reset, delta,
 * trigger or fill unfinished, and a variant whose write version differs from its read version (a
 * reset under way) or that serves nothing cannot be promoted: promotion copies one settled version.
 * A failure before the switch leaves the variants serving from experiment; a retry starts again at
 * prepare (what was copied stays: the copy overwrites it).
 */
import { isLatticeError, LatticeError } from '../../../../platform/errors.js';
import type { Payload, PointInput, VectorDb } from '../../../../platform/vectordb/index.js';
import {
  changedRows,
  collectionName,
  compileMembership,
  EXPIRES_AT_FIELD,
  type FlaggedVariant,
  membershipFlags,
  mergeAttributes,
  withoutFlags,
} from '../../../model/index.js';
import type {
  JsonObject,
  Model,
  Operation,
  StoredEmbedding,
  Variant,
  VssRepositories,
} from '../../../store/index.js';
import {
  type StepContext,
  type StepDefinition,
  type StepEffect,
  StepFailure,
  type StepOutcome,
} from '../step-registry.js';
import { targetOf } from '../vector-dbs.js';
import { operationVersion, variantKey } from './operation-targets.js';

export const PROMOTE_STEPS = [
  'prepare',
  'await_writers',
  'copy',
  'indexing',
  'switch',
  'drop_experiment',
] as const;

const PAGE = 500;
/** Re-reads of a page whose aggregator rows kept changing before the consumers are left to it. */
const RECHECKS = 3;

/** Which variants a promotion moves: the named one, or every experiment variant of the model. */
export type PromoteScope = 'variant' | 'model';

/** The variants this operation moves (as recorded at prepare, or as they are before it). */
function promotedNames(operation: Operation): string[] | undefined {
  const marker = operation.result?.promoted_variants;
  return Array.isArray(marker) ? marker.filter((v): v is string => typeof v === 'string') : undefined;
}

/**
 * Checks that `variants` can be promoted together and returns their version: each READY, serving a
 * version, with no newer write version; all on one version.
 */
export function promotableVersion(model: Model, variants: readonly Variant[]): number {
  let version: number | undefined;
  for (const variant of variants) {
    const label = `variant ${variant.variant} of model ${model.entity}/${model.modelName}`;
    if (variant.readVersion === null || variant.state !== 'READY') {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${label} is ${variant.state}${variant.readVersion === null ? ' and serves no version yet' : ''}: only a READY variant with data can be promoted (reset the model first)`,
        { field: 'variant' },
      );
    }
    if (variant.writeVersion !== variant.readVersion) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${label} writes version ${variant.writeVersion} while it serves ${variant.readVersion}: a reset of version ${variant.writeVersion} is under way or failed; promote once a reset has flipped`,
        { field: 'variant' },
      );
    }
    if (version !== undefined && variant.readVersion !== version) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `the variants of model ${model.entity}/${model.modelName} serve different versions (${version}, ${variant.readVersion}): promote them one at a time`,
        { field: 'model_name' },
      );
    }
    version = variant.readVersion;
  }
  if (version === undefined) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `model ${model.entity}/${model.modelName} has no variant in experiment to promote`,
      { field: 'model_name' },
    );
  }
  return version;
}

/** The experiment variants a promotion of `scope` moves, read through `repositories`. */
export async function variantsToPromote(
  repositories: VssRepositories,
  operation: Operation,
  scope: PromoteScope,
): Promise<Variant[]> {
  const all = await repositories.variants.list(operation);
  const recorded = promotedNames(operation);
  if (recorded !== undefined) return all.filter((v) => recorded.includes(v.variant));
  if (scope === 'variant') {
    const variant = all.find((v) => v.variant === operation.variant);
    if (variant === undefined) {
      throw new LatticeError('NOT_FOUND', `variant ${operation.variant} no longer exists`, {
        field: 'variant',
      });
    }
    return variant.cluster === 'experiment' ? [variant] : [];
  }
  return all.filter((v) => v.cluster === 'experiment');
}

/** Fails a step before the switch so that a retry starts at prepare (what was missed is copied again). */
function beforeSwitch(step: StepDefinition): StepDefinition {
  return {
    name: step.name,
    async run(ctx) {
      try {
        return await step.run(ctx);
      } catch (err) {
        const permanent =
          err instanceof StepFailure ||
          (err instanceof LatticeError &&
            ['INVALID_ARGUMENT', 'NOT_FOUND', 'FAILED_PRECONDITION', 'ALREADY_EXISTS'].includes(err.code));
        if (!permanent || ctx.step === 'prepare') throw err;
        throw new StepFailure(err.message, { resumeAt: 'prepare', cause: err });
      }
    },
  };
}

function settleMs(ctx: StepContext): number {
  return ctx.services.promoteSettleMs ?? 10_000;
}

function resultNumber(operation: Operation, field: string): number | undefined {
  const value = operation.result?.[field];
  return typeof value === 'number' ? value : undefined;
}

/** The steps of a promotion of `scope`; PROMOTE_MODEL also moves the model's own cluster. */
export function promoteSteps(scope: PromoteScope): StepDefinition[] {
  return [
    beforeSwitch({
      name: 'prepare',
      async run(ctx) {
        const { services, operation } = ctx;
        const model = await services.store.models.get(operation);
        const variants = await variantsToPromote(services.store, { ...operation, result: null }, scope);
        if (variants.length === 0) {
          // Already in production: nothing to copy, switch (the model's cluster) and finish.
          return ctx.advance('switch', 0.9, async (repositories, op) => {
            await repositories.operations.setResult(op.operationId, {
              ...op.result,
              promoted_variants: [],
            });
          });
        }
        const version = promotableVersion(model, variants);
        const production = (await services.store.variants.list(operation)).filter(
          (v) => v.cluster === 'production' && v.readVersion === version,
        );
        await ctx.heartbeat();
        await services.vectorDbs.ensureCollection(model, version, 'production', [...production, ...variants]);
        const names = variants.map((v) => v.variant);
        return ctx.advance('await_writers', 0.05, async (repositories, op) => {
          await repositories.operations.setResult(op.operationId, {
            ...withoutKeys(op.result, ['copy_after', 'copied', 'switched_at']),
            version,
            variant_version_map: Object.fromEntries(names.map((n) => [n, version])),
            promoted_variants: names,
            promoting: { version, variants: names },
            writers_from: Date.now(),
          });
        });
      },
    }),
    beforeSwitch({
      name: 'await_writers',
      async run(ctx) {
        const since = resultNumber(ctx.operation, 'writers_from') ?? 0;
        if (Date.now() < since + settleMs(ctx)) return ctx.wait(0.05);
        return ctx.advance('copy', 0.06);
      },
    }),
    beforeSwitch({ name: 'copy', run: (ctx) => copyVersion(ctx, scope) }),
    beforeSwitch({
      name: 'indexing',
      async run(ctx) {
        const { operation, services } = ctx;
        const version = operationVersion(operation);
        const name = collectionName(operation.entity, operation.modelName, version);
        const info = await services.vectorDbs.get('production').collectionInfo(name);
        const ratio = info.points === 0 ? 1 : info.indexedPoints / info.points;
        if (ratio < services.indexedThreshold) {
          return ctx.wait(0.8 + 0.1 * (ratio / services.indexedThreshold), {
            indexing: { indexed: info.indexedPoints, points: info.points },
          });
        }
        return ctx.advance('switch', 0.9, async (repositories, op) => {
          await repositories.operations.setResult(op.operationId, {
            ...op.result,
            indexing: { indexed: info.indexedPoints, points: info.points },
          });
        });
      },
    }),
    {
      name: 'switch',
      run: (ctx) =>
        ctx.advance('drop_experiment', 0.95, async (repositories, op) => {
          const names = promotedNames(op) ?? [];
          for (const name of names) {
            const key = variantKey(op, name);
            const variant = await repositories.variants.get(key);
            if (variant.cluster === 'production') continue;
            const version = operationVersion(op);
            if (
              variant.state !== 'READY' ||
              variant.readVersion !== version ||
              variant.writeVersion !== version
            ) {
              throw new LatticeError(
                'FAILED_PRECONDITION',
                `variant ${name} is ${variant.state} reading ${variant.readVersion ?? 'none'} and writing ${variant.writeVersion ?? 'none'}, no longer READY on the copied version ${version}: it stays in experiment`,
                { field: 'variant' },
              );
            }
            await repositories.variants.promote(key);
          }
          if (scope === 'model') await repositories.models.promote(op);
          await repositories.operations.setResult(op.operationId, {
            ...withoutKeys(op.result, ['promoting']),
            switched_at: Date.now(),
          });
        }),
    },
    {
      name: 'drop_experiment',
      async run(ctx) {
        const { operation, services } = ctx;
        const switched = resultNumber(operation, 'switched_at') ?? 0;
        if (Date.now() < switched + settleMs(ctx)) return ctx.wait(0.95);
        const names = promotedNames(operation) ?? [];
        const dropped: string[] = [];
        if (names.length > 0) {
          const version = operationVersion(operation);
          const variants = await services.store.variants.list(operation);
          const moved = variants.filter((v) => names.includes(v.variant));
          const targets = new Set(moved.map((v) => targetOf(v, 'experiment')));
          for (const target of targets) {
            const inUse = variants.some(
              (v) =>
                v.cluster === 'experiment' &&
                targetOf(v) === target &&
                (v.readVersion === version || v.writeVersion === version),
            );
            if (inUse || !services.vectorDbs.has(target)) continue;
            await ctx.heartbeat();
            if (await services.vectorDbs.dropCollection(operation, version, target)) dropped.push(target);
          }
        }
        return ctx.succeed({ dropped_experiment: dropped });
      },
    },
  ];
}

/** copy: the version's store rows into the production collection, resuming after `copy_after`. */
async function copyVersion(ctx: StepContext, scope: PromoteScope): Promise<StepOutcome> {
  const { operation, services } = ctx;
  const model = await services.store.models.get(operation);
  const { embeddingsTable, aggregatorTable } = await services.store.stores.get(model.storeId);
  const version = operationVersion(operation);
  const collection = collectionName(model.entity, model.modelName, version);
  const moved = await variantsToPromote(services.store, operation, scope);
  const all = await services.store.variants.list(operation);
  // Every variant whose membership the production points carry: those moving and those already there.
  const flagged: FlaggedVariant[] = [
    ...all.filter(
      (v) => v.cluster === 'production' && (v.readVersion === version || v.writeVersion === version),
    ),
    ...moved.filter((v) => v.cluster === 'experiment'),
  ].map((v) => ({ name: v.variant, rule: compileMembership(v.vssFilter) }));
  const production = services.vectorDbs.get('production');
  const experiment =
    moved[0] === undefined ? undefined : services.vectorDbs.get(targetOf(moved[0], 'experiment'));
  const total = Math.max(1, await services.store.embeddings.count(embeddingsTable, model.modelName, version));
  let copied = resultNumber(operation, 'copied') ?? 0;
  let afterId = typeof operation.result?.copy_after === 'string' ? operation.result.copy_after : undefined;
  for (;;) {
    const rows = await services.store.embeddings.scan(embeddingsTable, {
      modelName: model.modelName,
      version,
      limit: PAGE,
      ...(afterId === undefined ? {} : { afterId }),
    });
    if (rows.length === 0) break;
    const ids = rows.map((r) => r.id);
    const eventPayloads = await experimentAttributes(experiment, collection, ids);
    let aggregator = await services.store.aggregator.read(aggregatorTable, ids);
    const build = (subset: readonly StoredEmbedding[]): PointInput[] =>
      subset.map((row) => {
        const previous = eventPayloads.get(row.id);
        const eventPayload = previous === undefined ? undefined : withoutFlags(previous);
        const attributes = mergeAttributes(eventPayload, aggregator.get(row.id));
        return {
          id: row.id,
          vector: row.embedding,
          payload: {
            ...attributes,
            ...membershipFlags(flagged, attributes, row.toBeIndexed, undefined, previous),
            // The row's own expiry, so the copy expires with it (serving skips expired points).
            ...(row.expiresAt === null ? {} : { [EXPIRES_AT_FIELD]: row.expiresAt.getTime() }),
          },
        };
      });
    await production.upsert(collection, build(rows));
    // A real-time update racing this page: rewrite the points whose aggregator row changed.
    for (let pass = 0; pass < RECHECKS; pass++) {
      const now = await services.store.aggregator.read(aggregatorTable, ids);
      const changed = changedRows(
        new Map([[aggregatorTable, aggregator]]),
        new Map([[aggregatorTable, now]]),
      );
      aggregator = now;
      const changedIds = changed.get(aggregatorTable);
      if (changedIds === undefined) break;
      await production.upsert(collection, build(rows.filter((r) => changedIds.has(r.id))));
    }
    // An id deleted after the page was read (its delete reached production before this upsert).
    const still = await services.store.embeddings.read(embeddingsTable, {
      modelName: model.modelName,
      version,
      ids,
    });
    const gone = ids.filter((id) => !still.has(id));
    if (gone.length > 0) await production.delete(collection, gone);
    copied += rows.length - gone.length;
    afterId = ids.at(-1)!;
    await ctx.heartbeat();
    await ctx.wait(0.06 + 0.74 * Math.min(1, copied / total), { copy_after: afterId, copied });
  }
  const effect: StepEffect = async (repositories, op) => {
    await repositories.operations.setResult(op.operationId, {
      ...op.result,
      copied,
      copy_after: afterId ?? null,
    });
  };
  return ctx.advance('indexing', 0.8, effect);
}

/** The experiment points' payloads (their attributes hold the event payload); none when there is no collection. */
async function experimentAttributes(
  db: VectorDb | undefined,
  collection: string,
  ids: readonly string[],
): Promise<Map<string, Payload>> {
  const found = new Map<string, Payload>();
  if (db === undefined) return found;
  try {
    const points = await db.getPoints(collection, ids, { withVector: false, withPayload: true });
    for (const point of points) if (point !== undefined) found.set(point.id, point.payload ?? {});
  } catch (err) {
    if (!isLatticeError(err, 'NOT_FOUND')) throw err;
  }
  return found;
}

function withoutKeys(result: JsonObject | null, keys: readonly string[]): JsonObject {
  const copy: Record<string, JsonObject[string]> = { ...result };
  for (const key of keys) delete copy[key];
  return copy;
}
