/**
 * How the orchestrator's servers read request bytes. A small request is pre-checked (request
 * limits, UTF-8; request-precheck.ts) and decoded by the generated decoder in the deserializer. A
 * request of at least {@link SLICED_FROM_BYTES} is pre-checked and decoded in time slices once the
 * call has its signal (platform/protobuf/sliced-decode.ts): decoding 100,000 targets takes about
 * 110 ms, which would otherwise hold the event loop from every other call, and would go on after
 * the caller has gone. A large Predict request's targets, pairs and slates are decoded straight into
 * columns (request-columns.ts), not into an object per row and value.
 */
import { type Entity, OrchestratorRequestProto } from '../../gen/orchestrator/v1/orchestrator.js';
import { PredictRequest } from '../../gen/orchestrator/v1/predict.js';
import { LEN, type Visit } from '../../platform/protobuf/field-scan.js';
import { decodeInSlices } from '../../platform/protobuf/sliced-decode.js';
import { nextTurn, sliceOver } from '../../platform/scheduling/index.js';
import type { ColumnarPredictRequest } from '../engine/request-rows.js';
import { decodeEntityInSlices } from './entity-decoding.js';
import { elementReader, PairColumns, SlateColumns, TargetColumns } from './request-columns.js';
import { LegacyPrecheck, precheckLegacy, precheckPredict, predictPrecheck } from './request-precheck.js';

/** About 3 ms of decoding: below it a request is decoded in one go, as a slice would be. */
export const SLICED_FROM_BYTES = 64 * 1024;

type Pattern = 'point' | 'pair' | 'slate';

/**
 * A PredictRequest decoded in slices, its targets (field 5), pairs (7) and slates (9) straight into
 * columns (request-columns.ts); its own `targets`, `pairs` and `slates` stay empty. `check` sees every
 * top-level field first (the request pre-check).
 */
export async function decodePredictColumns(
  bytes: Uint8Array,
  signal: AbortSignal,
  deadline: number,
  check?: Visit,
): Promise<ColumnarPredictRequest> {
  const reader = elementReader(bytes);
  const rows = {
    targets: new TargetColumns(bytes),
    pairs: new PairColumns(bytes),
    slates: new SlateColumns(bytes),
  };
  const request = await decodeInSlices(bytes, {
    decode: (rest) => PredictRequest.decode(rest),
    repeated: [
      { field: 5, take: (_b, from, to) => rows.targets.add(reader, from, to) },
      { field: 7, take: (_b, from, to) => rows.pairs.add(reader, from, to) },
      { field: 9, take: (_b, from, to) => rows.slates.add(reader, from, to) },
    ],
    check,
    signal,
    deadline,
  });
  return Object.assign(request, { rows });
}

/** The request side of a Predict method: deserializer and sliced decoding. */
export function predictDecoding(pattern: Pattern) {
  return {
    requestDeserialize: (bytes: Buffer): PredictRequest => {
      precheckPredict(bytes, pattern);
      return PredictRequest.decode(bytes);
    },
    slicedFromBytes: SLICED_FROM_BYTES,
    requestDecodeSliced: (bytes: Buffer, signal: AbortSignal, deadline: number): Promise<PredictRequest> =>
      decodePredictColumns(bytes, signal, deadline, predictPrecheck(bytes, pattern)),
  };
}

/**
 * An OrchestratorRequestProto decoded in slices, each entity too (entity-decoding.ts: one entity may
 * hold 100,000 ids). With `precheck`, every field is pre-checked before it is decoded, an entity in
 * slices of its own as well.
 */
export async function decodeLegacyInSlices(
  bytes: Uint8Array,
  signal: AbortSignal,
  deadline: number,
  precheck?: LegacyPrecheck,
): Promise<OrchestratorRequestProto> {
  const reader = elementReader(bytes);
  const entities: Entity[] = [];
  const request = await decodeInSlices(bytes, {
    decode: (rest) => OrchestratorRequestProto.decode(rest),
    repeated: [
      {
        field: 1,
        take: async (_b, from, to) => {
          if (precheck) {
            for (const _ of precheck.entity(from, to)) if (sliceOver()) await nextTurn(signal, deadline);
          }
          entities.push(await decodeEntityInSlices(reader, from, to, signal, deadline));
        },
      },
    ],
    // Entities are pre-checked as they are taken; the other fields here.
    check:
      precheck &&
      ((field, type, from, to) => {
        if (type === LEN && field !== 1) precheck.other(field, from, to);
      }),
    signal,
    deadline,
  });
  request.entities = entities;
  return request;
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
    decodeLegacyInSlices(bytes, signal, deadline, new LegacyPrecheck(bytes)),
};
