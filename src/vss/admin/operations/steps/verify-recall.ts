/**
 * verify_recall: the reset's recall gate (recall-gate.ts), between indexing and the flip. It
 * measures every variant of the operation on the version's collection, records the figures on the
 * version (`recall`, shown by GET /models/…) and in the `vss_version_recall` gauge, and advances to
 * the flip only when every variant passed. Otherwise the operation fails here with the figures in
 * its error; the variants keep serving the version they serve (failTargets), and a retry runs this
 * step again, measuring afresh.
 */
import { collectionName, embeddingTtlSeconds } from '../../../model/index.js';
import {
  describeShortfall,
  measureVariantRecall,
  RECALL_GATE_DEFAULTS,
  recallFigures,
  type VariantRecall,
} from '../recall-gate.js';
import { type StepDefinition, StepFailure } from '../step-registry.js';
import { loadTargets, operationVersion } from './operation-targets.js';

export function verifyRecallStep(name: string, next: string, progress: number): StepDefinition {
  return {
    name,
    async run(ctx) {
      const { services, operation } = ctx;
      const settings = services.recallGate ?? RECALL_GATE_DEFAULTS;
      const { model, variants } = await loadTargets(services.store, operation);
      const version = operationVersion(operation);
      const collection = collectionName(operation.entity, operation.modelName, version);
      const store = await services.store.stores.get(model.storeId);
      const samples = await services.store.embeddings.sample(store.embeddingsTable, {
        modelName: model.modelName,
        version,
        limit: settings.sampleSize,
      });
      const measured: VariantRecall[] = [];
      for (const variant of variants) {
        await ctx.heartbeat();
        const result = await measureVariantRecall({
          db: services.vectorDbs.forVariant(variant),
          collection,
          variant,
          samples,
          k: settings.k,
          expiring: embeddingTtlSeconds(model) > 0,
          heartbeat: () => ctx.heartbeat(),
        });
        for (const [bucket, figures] of Object.entries(result.buckets)) {
          services.metrics.versionRecall(variant, bucket, figures.recall);
        }
        measured.push(result);
      }
      const figures = recallFigures(settings.k, settings.sampleSize, measured);
      const key = { entity: operation.entity, modelName: operation.modelName, version };
      if (measured.every((m) => m.passed)) {
        return ctx.advance(next, progress, (repositories) => repositories.versions.setRecall(key, figures));
      }
      // Kept before failing, so the figures stay on the version the operation could not serve.
      await services.store.versions.setRecall(key, figures);
      variants.forEach((variant, i) => {
        if (!measured[i]!.passed) services.metrics.recallGateFailed(variant);
      });
      throw new StepFailure(describeShortfall(settings.k, version, measured));
    },
  };
}
