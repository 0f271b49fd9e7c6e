/**
 * The GetEmbeddings and ScoreCandidates handlers: embeddings of the model's newest served version
 * by id (see {@link CandidateLookup}), returned as they are or scored against a query vector by the
 * model's distance function.
 */
import {
  CandidateEmbedding,
  type GetEmbeddingsRequest,
  type GetEmbeddingsResponse,
  type ScoreCandidatesRequest,
  type ScoreCandidatesResponse,
} from '../../gen/vss/v1/vss.js';
import { invalidArgument } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import { encodeInSlices } from '../../platform/protobuf/sliced-encode.js';
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
  /** Largest message the server sends (grpc.maxMessageBytes); a GetEmbeddings answer must fit it. */
  maxMessageBytes: number;
}

/**
 * Bytes of one CandidateEmbedding in a GetEmbeddingsResponse besides its id, at most: the entry's tag
 * and length (4), the id's tag and length (3), `found` (2), and two Vectors (each a tag, a length, and
 * inside it the packed field's tag and length: 8) of 4 bytes per value.
 */
const ENTRY_OVERHEAD = 4 + 3 + 2 + 2 * 8;
/** GetEmbeddings answers with more ids than this are encoded by the handler in time slices. */
export const SLICED_ANSWER_ENTRIES = 512;

/** Room kept for the response's own framing. */
const MESSAGE_SLACK = 1024;

/**
 * The request limit of GetEmbeddings beyond max_candidate_ids: its answer, every id found, must fit
 * one message. Each id costs its UTF-8 bytes + 25 + 8 × dimension (two vectors of 4-byte floats).
 */
export function checkAnswerFits(ids: readonly string[], dimension: number, maxMessageBytes: number): void {
  const perEntry = ENTRY_OVERHEAD + 8 * dimension;
  const budget = maxMessageBytes - MESSAGE_SLACK;
  let bytes = 0;
  for (const id of ids) bytes += perEntry + Buffer.byteLength(id, 'utf8');
  if (bytes <= budget) return;
  const fits = Math.floor((budget * ids.length) / bytes);
  throw invalidArgument(
    `candidate_ids: the answer for ${ids.length} ids at dimension ${dimension} would take up to ${bytes} bytes, above the largest message (${maxMessageBytes} bytes): the request limit max_embeddings_answer_bytes allows about ${fits} ids of this length per call (${8 * dimension + ENTRY_OVERHEAD} bytes per id plus the id)`,
    'candidate_ids',
  );
}

export class EmbeddingService {
  constructor(private readonly deps: EmbeddingServiceDeps) {}

  /**
   * The answer as a message, or, past {@link SLICED_ANSWER_ENTRIES} ids, already encoded a slice at
   * a time (up to 16 MB of floats would otherwise be written in one turn of the event loop).
   */
  getEmbeddings(
    request: GetEmbeddingsRequest,
    context: CallContext,
  ): Promise<GetEmbeddingsResponse | Buffer> {
    return measuredCall(this.deps.metrics, 'GetEmbeddings', async (labels) => {
      const model = await this.model(request.entity, request.modelName, labels);
      const ids = candidateIdsOf(request.candidateIds);
      checkAnswerFits(ids, model.config.vectorDimension, this.deps.maxMessageBytes);
      const found = await this.servedEmbeddings(model, ids, context, labels);
      const entry = (id: string): CandidateEmbedding => {
        const stored = found.get(id);
        if (!stored) return { id, found: false, embedding: { values: [] }, searchEmbedding: { values: [] } };
        return {
          id,
          found: true,
          embedding: { values: Array.from(stored.embedding) },
          searchEmbedding: { values: Array.from(stored.searchEmbedding) },
        };
      };
      if (ids.length <= SLICED_ANSWER_ENTRIES) return { embeddings: ids.map(entry) };
      return encodeInSlices({
        field: 1, // embeddings, the response's only field
        elements: ids,
        encode: (id) => CandidateEmbedding.encode(entry(id)).finish(),
        after: new Uint8Array(0),
        signal: context.signal,
        deadline: context.deadline,
      });
    });
  }

  scoreCandidates(request: ScoreCandidatesRequest, context: CallContext): Promise<ScoreCandidatesResponse> {
    return measuredCall(this.deps.metrics, 'ScoreCandidates', async (labels) => {
      const model = await this.model(request.entity, request.modelName, labels);
      const query = vectorOf(request.embedding?.values, model.config.vectorDimension, 'embedding.values');
      const ids = candidateIdsOf(request.candidateIds);
      const found = await this.servedEmbeddings(model, ids, context, labels);
      return {
        scores: ids.map((id) => {
          const stored = found.get(id);
          if (!stored) return { id, found: false, score: 0 };
          return { id, found: true, score: score(model.config.distanceFunction, query, stored.embedding) };
        }),
      };
    });
  }

  /** The stored embeddings of `ids`, the read timed as the store's latency. */
  private async servedEmbeddings(
    model: ServingModel,
    ids: readonly string[],
    context: CallContext,
    labels: ServingLabels,
  ) {
    const started = performance.now();
    const found = await this.deps.lookup.servedEmbeddings(model, ids, context);
    this.deps.metrics.storeMs(labels, performance.now() - started);
    return found;
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
