/**
 * FILL_VARIANT: a variant registered on a model that already serves a version joins that version
 * without re-ingesting (vss.md: variants share embeddings and the collection; membership is a flag):
 *
 *   fill_prepare → fill_flags → indexing → flip
 *
 * - fill_prepare: the variant writes the model's read version (INGESTING). From then on the
 *   consumers (embedding and real-time events) keep its flags current themselves, as for any
 *   variant writing that version.
 * - fill_flags: for every embedding-store row of the version, the variant's raw index flag
 *   (`to_be_indexed_<variant>` column) is set, and the point's membership flag in the shared
 *   collection is computed by the variant's `vss_filter` (model/membership.ts) on the point's
 *   attributes (the event payload merged over the aggregator row, as ingestion and the real-time
 *   consumers keep them). A row's raw flag is the one its training row carried: the flag its
 *   sibling variants got (a row's `to_be_indexed_column` applies to every variant); true when none
 *   has one. Then, as aggregator-recheck.ts does for ingestion, the points are read again and any
 *   whose attributes changed meanwhile (a real-time update racing the fill) are recomputed. The
 *   variant INGESTED → INDEXING in the transaction that moves on.
 * - indexing: the shared collection's indexed share (already indexed, normally).
 * - flip: READY on the version.
 *
 * A variant on another vector DB kind than the version's collection would need its own collection
 * filled from the embedding store: not done here (promotion's copy), so it fails with that reason.
 */
import type { Payload, VectorDb } from '../../../../platform/vectordb/index.js';
import {
  collectionName,
  compileMembership,
  isMember,
  type MembershipRule,
  membershipFlag,
} from '../../../model/index.js';
import type { StoredEmbedding } from '../../../store/index.js';
import { type OperationPlan, StepFailure } from '../step-registry.js';
import { targetOf } from '../vector-dbs.js';
import { flipStep, waitIndexedStep } from './indexing-steps.js';
import { failTargets, loadTargets, operationVersion, retryTargets, variantKey } from './operation-targets.js';

const PAGE = 500;
/** Re-reads of a page whose points kept changing before its flags are left to the real-time consumers. */
const RECHECKS = 3;

export const fillVariantPlan: OperationPlan = {
  kind: 'FILL_VARIANT',
  steps: [
    {
      name: 'fill_prepare',
      async run(ctx) {
        const { operation, services } = ctx;
        const { variants } = await loadTargets(services.store, operation);
        const variant = variants[0]!;
        const version = operationVersion(operation);
        const siblings = (await services.store.variants.list(operation)).filter(
          (v) => v.variant !== variant.variant && v.readVersion === version,
        );
        if (siblings.length > 0 && !siblings.some((s) => targetOf(s) === targetOf(variant))) {
          throw new StepFailure(
            `variant ${variant.variant} is on the ${targetOf(variant)} vector database and version ${version} is served from ${targetOf(siblings[0]!)}: filling a collection on another vector database from the embedding store is done by promotion, not by FILL_VARIANT`,
          );
        }
        services.vectorDbs.forVariant(variant);
        return ctx.advance('fill_flags', 0.05, async (repositories, op) => {
          const key = variantKey(op, variant.variant);
          const now = await repositories.variants.get(key);
          if (now.state === 'INGESTING' && now.writeVersion === version) return;
          await repositories.variants.transition(key, now.state, 'INGESTING', { writeVersion: version });
        });
      },
    },
    {
      name: 'fill_flags',
      async run(ctx) {
        const { operation, services } = ctx;
        const { model, variants } = await loadTargets(services.store, operation);
        const variant = variants[0]!;
        const version = operationVersion(operation);
        const rule = compileMembership(variant.vssFilter);
        const table = (await services.store.stores.get(model.storeId)).embeddingsTable;
        const collection = collectionName(model.entity, model.modelName, version);
        const db = services.vectorDbs.forVariant(variant);
        const total = Math.max(1, await services.store.embeddings.count(table, model.modelName, version));
        let done = 0;
        let afterId: string | undefined;
        for (;;) {
          const rows = await services.store.embeddings.scan(table, {
            modelName: model.modelName,
            version,
            limit: PAGE,
            ...(afterId === undefined ? {} : { afterId }),
          });
          if (rows.length === 0) break;
          const raw = rawFlags(rows, variant.variant);
          for (const [flag, ids] of groupBy(raw)) {
            await services.store.embeddings.setMembership(table, {
              modelName: model.modelName,
              version,
              ids,
              variant: variant.variant,
              toBeIndexed: flag,
            });
          }
          await fillPoints(db, collection, variant.variant, rule, raw);
          done += rows.length;
          afterId = rows.at(-1)!.id;
          await ctx.heartbeat();
          await ctx.wait(0.05 + 0.8 * Math.min(1, done / total));
        }
        return ctx.advance('indexing', 0.85, async (repositories, op) => {
          const key = variantKey(op, variant.variant);
          await repositories.variants.transition(key, 'INGESTING', 'INGESTED');
          await repositories.variants.transition(key, 'INGESTED', 'INDEXING');
          await repositories.operations.setResult(op.operationId, { ...op.result, filled_rows: done });
        });
      },
    },
    waitIndexedStep('indexing', 'flip', 0.85, 0.95),
    flipStep('flip', undefined, 1),
  ],
  onFail: (repositories, operation, reason) => failTargets(repositories, operation, reason),
  onRetry: (repositories, operation) => retryTargets(repositories, operation),
};

/** Each row's raw flag for the new variant: its own if set, else its siblings' (by name), else true. */
function rawFlags(rows: readonly StoredEmbedding[], variant: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const row of rows) {
    let flag = row.toBeIndexed[variant];
    if (flag === undefined) {
      const sibling = Object.keys(row.toBeIndexed).sort()[0];
      flag = sibling === undefined ? true : row.toBeIndexed[sibling]!;
    }
    flags.set(row.id, flag);
  }
  return flags;
}

function groupBy(values: ReadonlyMap<string, boolean>): Map<boolean, string[]> {
  const groups = new Map<boolean, string[]>();
  for (const [id, value] of values) {
    const ids = groups.get(value);
    if (ids === undefined) groups.set(value, [id]);
    else ids.push(id);
  }
  return groups;
}

/** The point's attributes: its payload without the membership flags. */
function attributesOf(payload: Payload | undefined): Payload {
  const prefix = membershipFlag('');
  const attributes: Payload = {};
  for (const [key, value] of Object.entries(payload ?? {}))
    if (!key.startsWith(prefix)) attributes[key] = value;
  return attributes;
}

/**
 * Sets the variant's membership flag on the page's points, then re-reads them and recomputes those
 * whose attributes changed in between (a real-time update that read the flag before it was set).
 */
async function fillPoints(
  db: VectorDb,
  collection: string,
  variant: string,
  rule: MembershipRule,
  raw: ReadonlyMap<string, boolean>,
): Promise<void> {
  const flag = membershipFlag(variant);
  const ids = [...raw.keys()];
  const seen = new Map<string, string>();
  for (let pass = 0; pass <= RECHECKS; pass++) {
    const points = await db.getPoints(collection, ids, { withVector: false, withPayload: true });
    const writes = new Map<string, boolean>();
    let changed = 0;
    points.forEach((point, i) => {
      const id = ids[i]!;
      if (point === undefined) return;
      const attributes = attributesOf(point.payload);
      const text = JSON.stringify(attributes);
      if (seen.get(id) === text) return;
      if (pass > 0) changed++;
      seen.set(id, text);
      const member = isMember(rule, raw.get(id) ?? true, attributes);
      if (point.payload?.[flag] !== member) writes.set(id, member);
    });
    for (const [member, group] of groupBy(writes)) await db.setPayload(collection, group, { [flag]: member });
    if (pass > 0 && changed === 0) break;
  }
}
