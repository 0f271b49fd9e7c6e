import { z } from 'zod';

/**
 * A model config's sticky A/B split (docs/orchestrator.md "Sticky A/B splits"): the requests naming
 * the config are shared among `arms` (other configs, or the config itself) by a hash of the context
 * feature `key`, so one key value (one user) always lands in the same arm while the weights stand.
 * The shape is checked here; validate-split.ts checks its meaning (weights sum to 100, arms unique,
 * the key a context feature) and the registry the arms against the configs that serve.
 */
export const splitSchema = z
  .object({
    /** The context feature whose value is hashed, e.g. `user_id`. */
    key: z.string().min(1).max(200),
    /**
     * Mixed into the hash with the key value; default the config's id, so two configs' splits are
     * independent. A new salt reshuffles every key (a fresh experiment on the same users).
     */
    salt: z.string().min(1).max(200).optional(),
    arms: z
      .array(
        z
          .object({
            /** The config serving this arm's share; may be the splitting config itself. */
            model_config_id: z.string().min(1).max(200),
            /** Percent of keys; the arms' weights sum to 100. */
            weight: z.number().min(0).max(100),
          })
          .strict(),
      )
      .min(1)
      .max(100),
  })
  .strict();

export type SplitConfig = z.output<typeof splitSchema>;
