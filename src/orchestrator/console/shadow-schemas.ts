/** The JSON schema of GET /api/v1/models/:id/shadows/:shadow (a shadow pair's comparison figures). */
import { z } from 'zod';

export const shadowParams = z.object({
  id: z.string().min(1).describe('the primary model_config_id'),
  shadow: z.string().min(1).describe("the shadow's model_config_id"),
});

const figure = (what: string) =>
  z.number().nullable().describe(`${what}; null when no comparison defined it`);
const latency = z
  .record(z.string(), z.number())
  .describe('shadow minus primary ms per component both ran; "(total)" is the whole execution');

export const shadowFiguresAnswer = z.object({
  primary: z.string(),
  shadow: z.string(),
  /** The primary's current config names this shadow (else the figures are from an earlier version). */
  active: z.boolean().describe("the primary's serving config names this shadow now"),
  percentage: z.number().nullable().describe('share of requests mirrored now; null when not active'),
  k: z.number().nullable().describe('top targets overlap@k compares; null when not active'),
  sampled: z.number().describe('requests sampled for mirroring since the process started, dropped or not'),
  dropped: z
    .object({ queue_full: z.number(), unknown_shadow: z.number() })
    .describe('mirrored requests dropped: the shadow queue was full, or no such config was loaded'),
  failed: z.number().describe('shadow executions that failed'),
  compared: z.number().describe('mirrored requests whose answers were compared'),
  window: z.number().describe('comparisons the figures below cover (the most recent, up to 100)'),
  overlap_at_k: figure('mean overlap of the two top-k target sets'),
  kendall_tau: figure("mean Kendall's tau-b over the targets both answers scored"),
  mean_abs_diff: figure('mean of the mean absolute score difference'),
  max_abs_diff: figure('largest absolute score difference'),
  latency_diff_ms: latency,
  last: z
    .object({
      overlap_at_k: z.number().nullable(),
      kendall_tau: z.number().nullable(),
      mean_abs_diff: z.number().nullable(),
      max_abs_diff: z.number().nullable(),
      shared: z.number().describe('targets both answers scored'),
      latency_diff_ms: latency,
    })
    .nullable()
    .describe('the latest comparison'),
});

export type ShadowFiguresAnswer = z.output<typeof shadowFiguresAnswer>;
