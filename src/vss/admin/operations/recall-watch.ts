/**
 * Automatic rollback on live recall (docs/vss.md "Recall gate and rollback"): serving re-runs a
 * sampled share of live queries exactly (`vss_avg_recall`, serving/recall-sampler.ts). When, for a
 * READY variant that can still be rolled back (its previous version is within its grace period) and
 * has served its version for a whole window, the mean of those samples on that version over the
 * last `windowMs` is below the variant's `min_recall`, with at least `minSamples` of them, the model
 * is rolled back (rollback-model, reason `live_recall`): a whole window of live traffic measured the
 * new version worse than the gate allows, so the version it replaced serves again.
 *
 * The samples come from a LiveRecallSource: the SQL store, where every serving process records its
 * measurements (storeLiveRecall), so the watch sees all replicas' traffic wherever the admin runs.
 */
import { describeError, isLatticeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { LiveRecallSource } from '../../model/index.js';
import type { VssStore } from '../../store/index.js';
import { rollbackWindow } from '../rollback-window.js';
import type { AdminLifecycle } from './operations-lifecycle.js';

export interface AutoRollbackSettings {
  /** The window whose mean live recall must stay at or above `min_recall`, ms; default 300,000. */
  windowMs: number;
  /** Fewest samples in the window for it to count; default 20. */
  minSamples: number;
}

export const AUTO_ROLLBACK_DEFAULTS: Readonly<AutoRollbackSettings> = { windowMs: 300_000, minSamples: 20 };

export interface RecallWatchOptions extends AutoRollbackSettings {
  store: VssStore;
  lifecycle: AdminLifecycle;
  source: LiveRecallSource;
  logger: Logger;
  now?: () => number;
}

/** Live recall from the SQL store: the samples every serving process recorded (migration 13). */
export function storeLiveRecall(store: VssStore): LiveRecallSource {
  return {
    liveRecall: (variant, version, windowMs) =>
      store.liveRecall.window(
        { entity: variant.entity, modelName: variant.modelName, variant: variant.variant },
        version,
        windowMs,
      ),
  };
}

/** One look at every model; resolves to the models rolled back (`entity/model`). */
export async function watchLiveRecall(options: RecallWatchOptions): Promise<string[]> {
  const { store, lifecycle, source, logger } = options;
  const now = (options.now ?? Date.now)();
  const rolledBack: string[] = [];
  for (const model of await store.models.list()) {
    const variants = await store.variants.list(model);
    if (!variants.some((v) => v.previousReadVersion !== null)) continue;
    const versions = await store.versions.list(model);
    const low: { variant: (typeof variants)[number]; live: { samples: number; mean: number } }[] = [];
    for (const variant of variants) {
      if (variant.readVersion === null) continue;
      if (!rollbackWindow(variant, versions, lifecycle.rollbackGraceMs, now).available) continue;
      // Sustained: the version has served for a whole window (since it was first served).
      const since = versions.find((v) => v.version === variant.readVersion)?.indexedAt;
      if (since == null || now - since.getTime() < options.windowMs) continue;
      const live = await source.liveRecall(variant, variant.readVersion, options.windowMs);
      if (live.samples < options.minSamples || !(live.mean < variant.minRecall)) continue;
      low.push({ variant, live });
    }
    if (low.length === 0) continue;
    const figures = low
      .map(
        ({ variant, live }) =>
          `variant ${variant.variant}: live recall ${live.mean.toFixed(3)} over ${live.samples} samples on version ${variant.readVersion}, min_recall ${variant.minRecall}`,
      )
      .join('; ');
    try {
      const done = await lifecycle.rollbackModel(model, { reason: 'live_recall' });
      rolledBack.push(`${model.entity}/${model.modelName}`);
      logger.warn(
        {
          entity: model.entity,
          model: model.modelName,
          variants: done.variants,
          windowMs: options.windowMs,
        },
        `vss admin: rolled ${model.entity}/${model.modelName} back to its previous version: ${figures}`,
      );
    } catch (err) {
      // An operation under way (or the window just closed): looked at again on the next round.
      if (!isLatticeError(err, 'FAILED_PRECONDITION')) throw err;
      logger.warn(
        { err: describeError(err), entity: model.entity, model: model.modelName },
        `vss admin: live recall is below min_recall (${figures}), but the model cannot be rolled back now`,
      );
    }
  }
  return rolledBack;
}
