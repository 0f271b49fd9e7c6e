export { Batcher, type BatchingOptions } from './batcher.js';
export { demoRankerFeatures, type WrittenModel, writeDemoModels } from './demo-models.js';
export { type PreparedInfer, prepareInfer } from './infer-request.js';
export { LoadedModel, type TensorSpec, type TensorValue } from './loaded-model.js';
export { type ModelConfig, modelConfigSchema } from './model-config.js';
export { ModelRepository, type ModelRepositoryOptions } from './model-repository.js';
export {
  type ModelServerPart,
  type ModelServerPartOptions,
  startModelServerPart,
} from './modelserver-part.js';
export {
  inferenceHandlers,
  type ModelServer,
  type ModelServerOptions,
  onnxPlatform,
  serverName,
  startModelServer,
} from './modelserver-server.js';
export {
  encodeModel,
  logisticRanker,
  seededRandom,
  seededWeights,
  textEcho,
  twoHeadRanker,
  typedRanker,
  writeModel,
} from './onnx-builder.js';
export { modelConfigFileName, modelFileName, modelFilePath } from './repository-layout.js';
export { type TensorType, tensorTypeOfKserve, tensorTypeOfOrt } from './tensor-types.js';
