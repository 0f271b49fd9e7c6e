/**
 * The `model_type` of POST /reset-model (vss.md): RESET, a new version indexed then flipped; DELTA,
 * rows into the current version, no flip. Its own module so that the CLI's flags name the same
 * values as the request schema without loading the API.
 */
export const MODEL_TYPES = ['RESET', 'DELTA'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];
