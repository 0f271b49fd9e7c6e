/**
 * What an operation acts on, as recorded in its row: the model, the variants (a reset's or delta's
 * `variant_version_map`, or the one variant of a variant operation) and the version. Also the
 * failure and retry bookkeeping every kind shares: variants (and the model) an operation drove are
 * marked FAILED with the state they failed in, and put back there on retry.
 */
import { isLatticeError, LatticeError } from '../../../../platform/errors.js';
import type {
  JsonObject,
  Model,
  Operation,
  Variant,
  VariantKey,
  VssRepositories,
} from '../../../store/index.js';

/** `variant_version_map` of the operation's result: variant → version. */
export function variantVersionMap(operation: Operation): Record<string, number> {
  const map = operation.result?.variant_version_map;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return {};
  const out: Record<string, number> = {};
  for (const [variant, version] of Object.entries(map as JsonObject)) {
    if (typeof version === 'number') out[variant] = version;
  }
  return out;
}

/** The variant names the operation drives. */
export function operationVariants(operation: Operation): string[] {
  if (operation.variant !== null) return [operation.variant];
  return Object.keys(variantVersionMap(operation)).sort();
}

/** The version the operation fills or indexes (`result.version`); INTERNAL when it was never recorded. */
export function operationVersion(operation: Operation): number {
  const version = operation.result?.version;
  if (typeof version !== 'number') {
    throw new LatticeError('INTERNAL', `operation ${operation.operationId} has no version in its result`);
  }
  return version;
}

/** A string field of the operation's result, if recorded. */
export function resultString(operation: Operation, field: string): string | undefined {
  const value = operation.result?.[field];
  return typeof value === 'string' ? value : undefined;
}

export function variantKey(operation: Operation, variant: string): VariantKey {
  return { entity: operation.entity, modelName: operation.modelName, variant };
}

/** The operation's model and its variants (all of those it drives, in name order). */
export async function loadTargets(
  repositories: VssRepositories,
  operation: Operation,
): Promise<{ model: Model; variants: Variant[] }> {
  const model = await repositories.models.get(operation);
  const names = new Set(operationVariants(operation));
  const variants = (await repositories.variants.list(operation)).filter((v) => names.has(v.variant));
  if (variants.length !== names.size) {
    const missing = [...names].filter((name) => !variants.some((v) => v.variant === name));
    throw new LatticeError(
      'NOT_FOUND',
      `variant ${missing.join(', ')} of model ${model.entity}/${model.modelName} no longer exists`,
    );
  }
  return { model, variants };
}

/** Marks the operation's unfinished variants FAILED (remembering their state) and an ingesting model. */
export async function failTargets(
  repositories: VssRepositories,
  operation: Operation,
  reason: string,
  options: { keepReady?: boolean } = {},
): Promise<void> {
  for (const name of operationVariants(operation)) {
    const variant = await repositories.variants.find(variantKey(operation, name));
    if (variant === undefined || variant.state === 'FAILED') continue;
    if (options.keepReady === true && variant.state === 'READY') continue;
    await repositories.variants.fail(variant, variant.state, reason);
  }
  const model = await repositories.models.find(operation);
  if (model?.state === 'INGESTING') await repositories.models.fail(model, 'INGESTING', reason);
}

/** Puts what failTargets marked back in the states they failed in. */
export async function retryTargets(repositories: VssRepositories, operation: Operation): Promise<void> {
  for (const name of operationVariants(operation)) {
    try {
      await repositories.variants.retry(variantKey(operation, name));
    } catch (err) {
      if (!isLatticeError(err, 'NOT_FOUND')) throw err;
    }
  }
  const model = await repositories.models.find(operation);
  if (model?.state === 'FAILED') await repositories.models.retry(model);
}
