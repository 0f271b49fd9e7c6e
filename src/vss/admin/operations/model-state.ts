/**
 * A model's state is its variants' as a whole: the least advanced state among those an operation has
 * taken up (REGISTERED → INGESTING → INGESTED → INDEXING → READY; a variant registered but not yet
 * filled does not hold the others back), or FAILED, with the state it failed in and the reason, when
 * a variant failed. The engine settles it in every transaction that changes variants, so the model
 * never says INGESTED while its variants are READY.
 */
import type { ModelKey, ModelState, Variant, VariantState, VssRepositories } from '../../store/index.js';

const ORDER: readonly VariantState[] = ['REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY'];

function leastAdvanced(states: readonly VariantState[]): ModelState {
  let least = ORDER.length - 1;
  for (const state of states) least = Math.min(least, Math.max(0, ORDER.indexOf(state)));
  return ORDER[least] as ModelState;
}

/** The model state the variants give (see the module comment). */
export function modelStateOf(variants: readonly Variant[]): {
  state: ModelState;
  failedState?: ModelState;
  reason?: string;
} {
  const failed = variants.filter((v) => v.state === 'FAILED');
  if (failed.length > 0) {
    return {
      state: 'FAILED',
      failedState: leastAdvanced(failed.map((v) => v.failedState ?? 'REGISTERED')),
      reason: failed.map((v) => `variant ${v.variant}: ${v.failureReason ?? 'failed'}`).join('; '),
    };
  }
  const taken = variants.filter((v) => v.state !== 'REGISTERED');
  return { state: taken.length === 0 ? 'REGISTERED' : leastAdvanced(taken.map((v) => v.state)) };
}

/** Sets the model's state from its variants', in the caller's transaction. */
export async function settleModelState(repositories: VssRepositories, model: ModelKey): Promise<void> {
  const key = { entity: model.entity, modelName: model.modelName };
  await repositories.models.settle(key, async () => modelStateOf(await repositories.variants.list(key)));
}
