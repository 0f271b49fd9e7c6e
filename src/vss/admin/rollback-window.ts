/**
 * A variant's rollback window (docs/vss.md "Recall gate and rollback"), as the status views show
 * it and the automatic rollback checks it. The store's rollback (store/rollback.ts) decides by the
 * database's clock; this is the same rule by this process's clock, for display and for choosing
 * what to try.
 */
import type { ModelVersion, Variant } from '../store/index.js';

/**
 * Whether rollback-model can take the variant back to its previous version now, and until when:
 * the end of that version's grace period (retired + `graceMs`), or no end (`until` null) while
 * another variant still serves it.
 */
export function rollbackWindow(
  variant: Variant,
  versions: readonly ModelVersion[],
  graceMs: number,
  now = Date.now(),
): { available: boolean; until: string | null } {
  const none = { available: false, until: null };
  if (variant.state !== 'READY' || variant.previousReadVersion === null) return none;
  const previous = versions.find((v) => v.version === variant.previousReadVersion);
  if (previous?.status === 'SERVING') return { available: true, until: null };
  if (previous?.status !== 'RETIRED' || previous.retiredAt === null) return none;
  const until = previous.retiredAt.getTime() + graceMs;
  return until > now ? { available: true, until: new Date(until).toISOString() } : none;
}
