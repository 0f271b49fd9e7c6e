import { randomUUID } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import type { PredictRequest } from '../../gen/orchestrator/v1/predict.js';
import type { CallContext, UnaryHandlers } from '../../platform/grpc/index.js';
import { ExecutionTimeline } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { InferenceRequest } from '../engine/feature-init.js';
import type { InferenceEngine, InferenceResult } from '../engine/inference-engine.js';
import { checkModelConfigId } from '../engine/request-limits.js';
import { encodeLegacyAnswerInSlices, type LegacyService } from '../wire/legacy-response-codec.js';
import {
  answerRows,
  encodePredictAnswerInSlices,
  type PredictServiceAnswers,
} from '../wire/predict-response-codec.js';
import { encodeTimings, TIMINGS_KEY, timingsAsked } from '../wire/timings-trailer.js';
import { legacyResponse, legacyTable, predictAnswer } from './responses.js';

/** Answers of more rows than this are encoded in time slices by the handler rather than at once by grpc-js. */
const SLICED_ANSWER_ROWS = 4096;

/** Called after every successful execution (the inference logger hooks in here); must not throw or block. */
export type ExecutionObserver = (context: ExecutionContext) => void;

/**
 * The handlers of `orchestrator.v1.Predict`: each validates the request (FeatureInit), executes the
 * model's DAG on its current snapshot within the call's deadline and cancellation, and answers from
 * the matrix. Errors are LatticeErrors mapped to statuses by the gRPC server in one place.
 */
export function predictHandlers(
  engine: InferenceEngine,
  observe?: ExecutionObserver,
): UnaryHandlers<typeof PredictServiceAnswers> {
  const infer =
    (pattern: 'point' | 'pair' | 'slate') => async (request: PredictRequest, call: CallContext) => {
      checkModelConfigId(request.modelConfigId);
      // A request without a tracking id gets one here, so its answer names the id its inference log records carry.
      const trackingId = request.trackingId || randomUUID();
      const { context, errors } = await execute(
        engine,
        request.modelConfigId,
        { pattern, request },
        trackingId,
        call,
      );
      observe?.(context);
      const answer = { ...predictAnswer(context, request.returnTargetScores), errors };
      return answerRows(answer) > SLICED_ANSWER_ROWS
        ? encodePredictAnswerInSlices(answer, call.signal, call.deadline)
        : answer;
    };
  return { inferPointWise: infer('point'), inferPairWise: infer('pair'), inferSlateWise: infer('slate') };
}

/** The handler of the legacy entity API, `orchestrator.v1.Orchestrator/RetrieveModelScore`. */
export function legacyHandlers(
  engine: InferenceEngine,
  observe?: ExecutionObserver,
): UnaryHandlers<typeof LegacyService> {
  return {
    retrieveModelScore: async (request, call) => {
      checkModelConfigId(request.modelConfigId);
      const { context } = await execute(
        engine,
        request.modelConfigId,
        { pattern: 'legacy', request },
        request.trackingId,
        call,
      );
      observe?.(context);
      // A large answer is written straight to bytes, a slice of rows at a time.
      return context.matrix.rowCount + 1 > SLICED_ANSWER_ROWS
        ? encodeLegacyAnswerInSlices(legacyTable(context), call)
        : legacyResponse(context, call);
    },
  };
}

/**
 * Runs one request within the call's deadline and cancellation; a call whose metadata asks for
 * timings (`lattice-timings: 1`) gets them as the `lattice-timings` trailer, with its answer or its
 * error. Without the ask nothing is measured beyond what every request measures.
 */
async function execute(
  engine: InferenceEngine,
  modelConfigId: string,
  input: InferenceRequest,
  trackingId: string,
  call: CallContext,
): Promise<InferenceResult> {
  if (!timingsAsked(call.metadata)) {
    return engine.execute(modelConfigId, input, trackingId, { signal: call.signal, deadline: call.deadline });
  }
  const timeline = new ExecutionTimeline();
  try {
    return await engine.execute(modelConfigId, input, trackingId, {
      signal: call.signal,
      deadline: call.deadline,
      timeline,
    });
  } finally {
    // Nothing recorded: the request ended before its model was found (an unknown id).
    if (timeline.components.length > 0) {
      const trailers = new Metadata();
      trailers.set(TIMINGS_KEY, encodeTimings(timeline.totalMs, timeline.components));
      call.trailers = trailers;
    }
  }
}
