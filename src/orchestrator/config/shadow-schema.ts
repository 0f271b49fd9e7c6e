import { z } from 'zod';

/**
 * A config's `shadow` block (orchestrator.md "Shadow configs"): `percentage` of its requests are
 * also run, off the request path, on the config `model_config_id`, and the two answers compared
 * over their top `k` targets. The shadow may name a config not loaded yet (configs load in any
 * order): until it is, its mirrored requests are dropped and counted. A shadow's own `shadow` is
 * never followed for mirrored requests (one hop: no chains, no loops).
 */
export const shadowSchema = z
  .object({
    model_config_id: z.string().min(1).max(200),
    percentage: z.number().min(0).max(100),
    /** How many top targets overlap@k compares. */
    k: z.number().int().min(1).max(100_000).default(10),
  })
  .strict();

export type ShadowConfig = z.output<typeof shadowSchema>;

/** What the shape cannot say: a config is not its own shadow (problems as validate-model.ts's ConfigProblem). */
export function shadowProblems(config: {
  model_config_id: string;
  shadow?: ShadowConfig;
}): { path: string; message: string }[] {
  if (config.shadow === undefined || config.shadow.model_config_id !== config.model_config_id) return [];
  return [{ path: 'shadow.model_config_id', message: 'names the config itself: a shadow is another config' }];
}
