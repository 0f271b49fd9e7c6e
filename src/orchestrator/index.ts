/**
 * The orchestrator service: started by `startOrchestratorPart` on a process's platform (settings and
 * adapters). Its layers are api (gRPC servers), clients, components, config, dag, engine, logging
 * and matrix; other services and the CLI reach it here or through its client (client.ts).
 */
export {
  type DownstreamClients,
  type OrchestratorPart,
  type OrchestratorPartOptions,
  startOrchestratorPart,
} from './orchestrator-part.js';
