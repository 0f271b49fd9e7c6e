/**
 * The meaning of a model config's `split` (split-schema.ts): what the document alone shows
 * (splitProblems, run by validateModelConfig) and what it shows against the configs that serve
 * (splitArmProblems, run by a started ModelRegistry). Problems carry their JSON paths.
 */
import type { ModelConfig } from './schema.js';

/** A problem at its JSON path: validate-model.ts's ConfigProblem (not imported: that file imports this one). */
interface ConfigProblem {
  path: string;
  message: string;
}

/** Weights are percents, compared to 100 within rounding (33.3 + 33.3 + 33.4). */
const WEIGHT_TOLERANCE = 1e-9;

/**
 * The split's weights sum to 100, its arms are distinct, and its key is a context feature: one
 * value per request, supplied by the caller (not the target id column, not a column a component
 * produces, not a feature store column, and listed in `request_features` when that is declared).
 */
export function splitProblems(
  config: ModelConfig,
  producerOf: (column: string) => string | undefined,
): ConfigProblem[] {
  const split = config.split;
  if (split === undefined) return [];
  const problems: ConfigProblem[] = [];
  const total = split.arms.reduce((sum, arm) => sum + arm.weight, 0);
  if (Math.abs(total - 100) > WEIGHT_TOLERANCE)
    problems.push({ path: 'split.arms', message: `weights sum to ${total}, not 100` });
  const seen = new Map<string, number>();
  split.arms.forEach((arm, i) => {
    const first = seen.get(arm.model_config_id);
    if (first !== undefined)
      problems.push({
        path: `split.arms[${i}].model_config_id`,
        message: `"${arm.model_config_id}" is already split.arms[${first}]; list each config once`,
      });
    else seen.set(arm.model_config_id, i);
  });
  const key = split.key;
  const producer = producerOf(key);
  const notContext = 'the split key must be a context feature the request supplies (one value per request)';
  if (key === config.target_id_column)
    problems.push({ path: 'split.key', message: `"${key}" is the target id column; ${notContext}` });
  else if (producer !== undefined)
    problems.push({
      path: 'split.key',
      message: `"${key}" is produced by component ${producer}; ${notContext}`,
    });
  else if (key.split(':').length >= 3)
    problems.push({ path: 'split.key', message: `"${key}" is a feature store column; ${notContext}` });
  else if (config.request_features !== undefined && !config.request_features.includes(key))
    problems.push({ path: 'split.key', message: `"${key}" is not listed in request_features` });
  return problems;
}

/** What a split needs to know of another config. */
export interface SplitPeer {
  readonly split?: ModelConfig['split'];
}

/**
 * The split against the configs serving now: every arm other than the config itself serves, and
 * splits do not chain (an arm has no split of its own, and a config that is another split's arm
 * gets none), so a request is routed once. A config without a split has nothing to check.
 */
export function splitArmProblems(
  id: string,
  config: ModelConfig,
  serving: ReadonlyMap<string, SplitPeer>,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const split = config.split;
  if (split === undefined) return problems;
  split.arms.forEach((arm, i) => {
    if (arm.model_config_id === id) return;
    const peer = serving.get(arm.model_config_id);
    const path = `split.arms[${i}].model_config_id`;
    if (peer === undefined)
      problems.push({
        path,
        message: `no model config "${arm.model_config_id}" is serving; apply the arm's config before the split`,
      });
    else if (peer.split !== undefined)
      problems.push({
        path,
        message: `"${arm.model_config_id}" has a split of its own; splits do not chain`,
      });
  });
  for (const [other, peer] of serving) {
    if (other === id) continue;
    if (peer.split?.arms.some((arm) => arm.model_config_id === id))
      problems.push({
        path: 'split',
        message: `"${id}" is an arm of the split of "${other}"; splits do not chain`,
      });
  }
  return problems;
}
