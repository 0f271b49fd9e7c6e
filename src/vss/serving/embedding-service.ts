/**
 * The GetEmbeddings and ScoreCandidates handlers: embeddings of the model's newest served version
 * by id (see {@link CandidateLookup}), returned as they are or scored against a query vector by the
 * model's distance function.
 */
import type {
  GetEmbeddingsRequest,
  GetEmbeddingsResponse,
  ScoreCandidatesRequest,
  ScoreCandidatesResponse,
} from '../../gen/vss/v1/vss.js';
import type { CallContext } from '../../platform/grpc/index.js';
import type { CandidateLookup } from './candidate-lookup.js';
import type { ServingConfigRepository, ServingModel } from './config-repository.js';
import { measuredCall } from './measured-call.js';
import { candidateIdsOf, requireName, vectorOf } from './request-validation.js';
import { score } from './scoring.js';
import type { ServingLabels, ServingMetrics } from './serving-metrics.js';

export interface EmbeddingServiceDeps {
  config: ServingConfigRepository;
  lookup: CandidateLookup;
  metrics: ServingMetrics;
}

export class EmbeddingService {
  constructor(private readonly deps: EmbeddingServiceDeps) {}

  getEmbeddings(request: GetEmbeddingsRequest, context: CallContext): Promise<GetEmbeddingsResponse> {
    return measuredCall(this.deps.metrics, 'GetEmbeddings', async (labels) => {
      const model = await this.model(request.entity, request.modelName, labels);
      const ids = candidateIdsOf(request.candidateIds);
      const found = await this.deps.lookup.servedEmbeddings(model, ids, context);
      return {
        embeddings: ids.map((id) => {
          const stored = found.get(id);
          if (!stored)
            return { id, found: false, embedding: { values: [] }, searchEmbedding: { values: [] } };
          return {
            id,
            found: true,
            embedding: { values: Array.from(stored.embedding) },
            searchEmbedding: { values: Array.from(stored.searchEmbedding) },
          };
        }),
      };
    });
  }

  scoreCandidates(request: ScoreCandidatesRequest, context: CallContext): Promise<ScoreCandidatesResponse> {
    return measuredCall(this.deps.metrics, 'ScoreCandidates', async (labels) => {
      const model = await this.model(request.entity, request.modelName, labels);
      const query = vectorOf(request.embedding?.values, model.config.vectorDimension, 'embedding.values');
      const ids = candidateIdsOf(request.candidateIds);
      const found = await this.deps.lookup.servedEmbeddings(model, ids, context);
      return {
        scores: ids.map((id) => {
          const stored = found.get(id);
          if (!stored) return { id, found: false, score: 0 };
          return { id, found: true, score: score(model.config.distanceFunction, query, stored.embedding) };
        }),
      };
    });
  }

  private async model(entity: string, modelName: string, labels: ServingLabels): Promise<ServingModel> {
    requireName(entity, 'entity');
    requireName(modelName, 'model_name');
    const model = await this.deps.config.model({ entity, modelName });
    labels.entity = entity;
    labels.model = modelName;
    return model;
  }
}
