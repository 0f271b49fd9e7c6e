/**
 * `GET /models` on the ops HTTP server of a process that runs the orchestrator (`lattice up`,
 * `lattice orchestrator`): what its ModelRegistry serves now, per model config: the config version
 * it loaded and when, and the latest change it rejected (the previous version keeps serving). The
 * config store says what is written; only the running process knows what it loaded, which is what
 * `lattice models` shows beside each document.
 *
 * The route is registered before the ops server listens (so /healthz answers while the parts start)
 * and answers 503 until the orchestrator has started and `serve` was called.
 */
import type { FastifyInstance } from 'fastify';
import type { ModelStatus } from '../config/model-registry.js';

export const MODEL_STATUS_PATH = '/models';

/** One model config as `GET /models` answers it. */
export interface ServedModelStatus {
  model_config_id: string;
  /** The config version serving now; absent when no valid version was ever loaded. */
  version?: string;
  /** When that version was loaded (ISO 8601). */
  loaded_at?: string;
  /** The latest rejected change, while `version` keeps serving. */
  rejected?: { version: string; at: string; error: string };
}

export interface ModelStatusAnswer {
  models: ServedModelStatus[];
}

export function toServedStatus(status: ModelStatus): ServedModelStatus {
  const served: ServedModelStatus = { model_config_id: status.id };
  if (status.version !== undefined) served.version = status.version;
  if (status.loadedAt !== undefined) served.loaded_at = new Date(status.loadedAt).toISOString();
  if (status.rejected !== undefined && status.lastError !== undefined) {
    served.rejected = {
      version: status.rejected.version,
      at: new Date(status.rejected.at).toISOString(),
      error: status.lastError,
    };
  }
  return served;
}

/** The route, and `serve` to call once the orchestrator's registry exists. */
export function registerModelStatusRoute(app: FastifyInstance): {
  serve(status: () => ModelStatus[]): void;
} {
  let source: (() => ModelStatus[]) | undefined;
  app.get(MODEL_STATUS_PATH, async (_request, reply) => {
    if (source === undefined) {
      return reply
        .status(503)
        .send({ error: { code: 'UNAVAILABLE', message: 'the orchestrator has not started yet' } });
    }
    const answer: ModelStatusAnswer = { models: source().map(toServedStatus) };
    return answer;
  });
  return {
    serve(status) {
      source = status;
    },
  };
}
