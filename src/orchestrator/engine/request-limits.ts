import { invalidArgument, type LatticeError } from '../../platform/errors.js';
import { MAX_NAME_LENGTH } from '../config/index.js';

/**
 * What one request may ask of the server; past any of them the request is INVALID_ARGUMENT naming
 * the limit and the field, before the matrix is allocated. Each bounds a cost that grows with it
 * (FeatureInit, the DAG's per-cell work, the answer) and was measured on a 2-core VM so that the
 * largest request of each shape that passes takes well under a second of server CPU (see the
 * docs/orchestrator.md, "Request limits"). Costs multiply: a context feature is counted once per target.
 */
export const REQUEST_LIMITS = {
  /** Characters of `model_config_id` (no model can have a longer one). */
  modelConfigIdLength: MAX_NAME_LENGTH,
  /** Targets of a Predict request; ids of one entity in a legacy request. */
  targets: 100_000,
  /** Pairs or slates of a request. */
  groups: 100_000,
  /** Target indices of one slate. */
  slateSize: 10_000,
  /** Target indices of all slates together. */
  slateIndices: 1_000_000,
  /** Schema entries of a request: context features + target, pair and slate schema (legacy: entities + their features). */
  features: 1_000,
  /** Per-row values a request carries: targets × target schema + pairs/slates × their schema (legacy: every id and feature value). */
  values: 250_000,
  /** Cells of the request's matrices: rows × columns (the model's own columns included), target matrix plus pair/slate rows. */
  matrixCells: 2_000_000,
  /** Value bytes of the request's matrices, a broadcast context feature (or legacy single id) counted once per row. */
  matrixBytes: 64 * 1024 * 1024,
} as const;

export type RequestLimit = keyof typeof REQUEST_LIMITS;

/** The names messages and the docs give the limits. */
export const REQUEST_LIMIT_NAMES: Record<RequestLimit, string> = {
  modelConfigIdLength: 'max_model_config_id_length',
  targets: 'max_targets',
  groups: 'max_pairs_or_slates',
  slateSize: 'max_slate_size',
  slateIndices: 'max_slate_indices',
  features: 'max_schema_entries',
  values: 'max_feature_values',
  matrixCells: 'max_matrix_cells',
  matrixBytes: 'max_matrix_bytes',
};

/** INVALID_ARGUMENT naming the field and the limit when `amount` exceeds `limit`; `what` says what was counted. */
export function checkLimit(limit: RequestLimit, amount: number, field: string, what: string): void {
  if (amount > REQUEST_LIMITS[limit]) throw overLimit(limit, amount, field, what);
}

export function overLimit(limit: RequestLimit, amount: number, field: string, what: string): LatticeError {
  return invalidArgument(
    `${field}: ${amount} ${what} exceed the request limit ${REQUEST_LIMIT_NAMES[limit]} (${REQUEST_LIMITS[limit]})`,
    field,
  );
}

/** `model_config_id` non-empty and no longer than any model's id, checked before it is looked up or quoted. */
export function checkModelConfigId(id: string): void {
  if (id === '') throw invalidArgument('model_config_id must not be empty', 'model_config_id');
  checkLimit('modelConfigIdLength', id.length, 'model_config_id', 'characters');
}
