export { EXAMPLE_IDS_HEADER, MODELS_API, registerModelConsoleRoutes } from './console-routes.js';
export {
  type ExamplePattern,
  type ExampleRequest,
  exampleRequest,
  type PredictRequestJson,
} from './example-request.js';
export {
  type ChangeResult,
  EXTERNAL_AUTHOR,
  MODELS_PREFIX,
  type ModelConfigDetail,
  type ModelConfigState,
  type ModelConfigSummary,
  ModelConfigs,
} from './model-configs.js';
export { ModelConsole, type ModelConsoleOptions } from './model-console.js';
export { type ModelDag, modelDag } from './model-dag.js';
export {
  type ConfigRevision,
  KEPT_REVISIONS,
  REVISIONS_PREFIX,
  RevisionHistory,
} from './revision-history.js';
