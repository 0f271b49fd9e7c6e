/**
 * What an operation acts on, as recorded in its row: the model, the variants (a reset's or delta's
 * `variant_version_map`, or the one variant of a variant operation) and the version. Also the
 * failure and retry bookkeeping every kind shares (failTargets, retryTargets).
 */
import { LatticeError } from '../../../../platform/errors.js';
import type {
  JsonObject,
  Model,
  Operation,
  Variant,
  VariantKey,
  VariantState,
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

/**
 * After the operation failed: a variant that serves a version goes back to READY on it (keeping
 * its write version for a retry), since the failure is the operation's and its version's, not the
 * served version's; a variant that serves nothing is marked FAILED with the state it failed in. With
 * `ownsVersion` (a reset), the version it was writing is marked FAILED too unless a variant reads it.
 */
export async function failTargets(
  repositories: VssRepositories,
  operation: Operation,
  reason: string,
  options: { ownsVersion?: boolean } = {},
): Promise<void> {
  for (const name of operationVariants(operation)) {
    const variant = await repositories.variants.find(variantKey(operation, name));
    if (variant === undefined || variant.state === 'FAILED') continue;
    if (variant.readVersion !== null) {
      if (variant.state !== 'READY') await repositories.variants.serveReadVersion(variant, variant.state);
      continue;
    }
    await repositories.variants.fail(variant, variant.state, reason);
  }
  const version = operation.result?.version;
  if (options.ownsVersion === true && typeof version === 'number') {
    const key = { entity: operation.entity, modelName: operation.modelName, version };
    const status = (await repositories.versions.find(key))?.status;
    if (status === 'INGESTING' || status === 'INGESTED')
      await repositories.versions.fail(key, status, reason);
  }
}

/**
 * Puts back what failTargets changed: FAILED variants in the states they failed in, the version
 * where its ingestion had got to, and variants sent back to serving their read version in the state
 * the step the retry resumes at needs (`resumeStates`: step → state), writing the operation's version.
 */
export async function retryTargets(
  repositories: VssRepositories,
  operation: Operation,
  resumeStates: Readonly<Record<string, VariantState>> = {},
): Promise<void> {
  const version = operation.result?.version;
  if (typeof version === 'number') {
    const key = { entity: operation.entity, modelName: operation.modelName, version };
    if ((await repositories.versions.find(key))?.status === 'FAILED') await repositories.versions.retry(key);
  }
  const resume = operation.step === null ? undefined : resumeStates[operation.step];
  for (const name of operationVariants(operation)) {
    const key = variantKey(operation, name);
    const variant = await repositories.variants.find(key);
    if (variant === undefined) continue;
    if (variant.state === 'FAILED') await repositories.variants.retry(key);
    else if (
      resume !== undefined &&
      typeof version === 'number' &&
      variant.state === 'READY' &&
      variant.readVersion !== version
    ) {
      await repositories.variants.transition(key, 'READY', resume as Exclude<VariantState, 'FAILED'>, {
        writeVersion: version,
      });
    }
  }
}
