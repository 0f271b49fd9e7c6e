export {
  MODEL_STATUS_PATH,
  type ModelStatusAnswer,
  registerModelStatusRoute,
  type ServedModelStatus,
} from './model-status-route.js';
export {
  type OrchestratorServerOptions,
  type RunningOrchestrator,
  startOrchestrator,
} from './orchestrator-server.js';
export { type ExecutionObserver, legacyHandlers, predictHandlers } from './orchestrator-services.js';
export { legacyResponse, predictAnswer } from './responses.js';
