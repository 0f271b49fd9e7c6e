/**
 * How the orchestrator's servers read request bytes. A small request is pre-checked (request
 * limits, UTF-8; request-precheck.ts) and decoded by the generated decoder in the deserializer. A
 * request of at least {@link SLICED_FROM_BYTES} is pre-checked and decoded in time slices once the
 * call has its signal (platform/protobuf/sliced-decode.ts): decoding 100,000 targets takes about
 * 110 ms, which would otherwise hold the event loop from every other call, and would go on after
 * the caller has gone.
 */
import { Entity, OrchestratorRequestProto } from '../../gen/orchestrator/v1/orchestrator.js';
import { PredictRequest, Target, TargetPair, TargetSlate } from '../../gen/orchestrator/v1/predict.js';
import { decodeInSlices } from '../../platform/protobuf/sliced-decode.js';
import { legacyPrecheck, precheckLegacy, precheckPredict, predictPrecheck } from './request-precheck.js';

/** About 3 ms of decoding: below it a request is decoded in one go, as a slice would be. */
export const SLICED_FROM_BYTES = 64 * 1024;

type Pattern = 'point' | 'pair' | 'slate';

/** Field numbers and properties of PredictRequest's repeated rows (proto/orchestrator/v1/predict.proto). */
const PREDICT_ROWS = [
  { field: 5, property: 'targets', decode: (b: Uint8Array) => Target.decode(b) },
  { field: 7, property: 'pairs', decode: (b: Uint8Array) => TargetPair.decode(b) },
  { field: 9, property: 'slates', decode: (b: Uint8Array) => TargetSlate.decode(b) },
];

/** The request side of a Predict method: deserializer and sliced decoding. */
export function predictDecoding(pattern: Pattern) {
  return {
    requestDeserialize: (bytes: Buffer): PredictRequest => {
      precheckPredict(bytes, pattern);
      return PredictRequest.decode(bytes);
    },
    slicedFromBytes: SLICED_FROM_BYTES,
    requestDecodeSliced: (bytes: Buffer, signal: AbortSignal, deadline: number): Promise<PredictRequest> =>
      decodeInSlices(bytes, {
        decode: (rest) => PredictRequest.decode(rest),
        repeated: PREDICT_ROWS,
        check: predictPrecheck(bytes, pattern),
        signal,
        deadline,
      }),
  };
}

/** The request side of RetrieveModelScore. */
export const legacyDecoding = {
  requestDeserialize: (bytes: Buffer): OrchestratorRequestProto => {
    precheckLegacy(bytes);
    return OrchestratorRequestProto.decode(bytes);
  },
  slicedFromBytes: SLICED_FROM_BYTES,
  requestDecodeSliced: (
    bytes: Buffer,
    signal: AbortSignal,
    deadline: number,
  ): Promise<OrchestratorRequestProto> =>
    decodeInSlices(bytes, {
      decode: (rest) => OrchestratorRequestProto.decode(rest),
      repeated: [{ field: 1, property: 'entities', decode: (b: Uint8Array) => Entity.decode(b) }],
      check: legacyPrecheck(bytes),
      signal,
      deadline,
    }),
};
