export { QUOTE_PREFIX, quote } from '../../platform/quote.js';
export {
  type ComponentBuilder,
  ModelRegistry,
  type ModelRegistryOptions,
  type ModelSnapshot,
  type ModelStatus,
  problemsOf,
  type SettledChange,
} from './model-registry.js';
export type {
  CalibrationConfig,
  ComputeComponentConfig,
  FeatureComponentConfig,
  ModelConfig,
  ModelConfigInput,
  ModelServingComponentConfig,
} from './schema.js';
export { MAX_NAME_LENGTH, modelConfigSchema } from './schema.js';
export {
  type ComponentKind,
  type ComponentPlan,
  type ConfigProblem,
  FEATURE_INIT,
  ModelConfigError,
  type ValidatedModel,
  validateModelConfig,
} from './validate-model.js';
