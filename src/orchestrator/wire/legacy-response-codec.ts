/**
 * `orchestrator.v1.Orchestrator` (the legacy entity API) as this server serves it: requests are
 * counted before they are decoded, large ones in time slices (request-decoding.ts); a large answer
 * (a ComponentData row per id, up to 100,000) is encoded in time slices by the handler, which hands
 * grpc-js the finished bytes. Each row is the generated ComponentData encoder's: a hand-written
 * writer straight from the matrix was slower (bench/RESULTS.md, "wire codecs").
 */
import {
  ComponentData,
  OrchestratorResponseProto,
  OrchestratorService,
} from '../../gen/orchestrator/v1/orchestrator.js';
import { encodeInSlices } from '../../platform/protobuf/sliced-encode.js';
import { legacyDecoding } from './request-decoding.js';

/** The bytes `OrchestratorResponseProto.encode(response)` writes, encoded a slice of rows at a time. */
export function encodeLegacyResponseInSlices(
  response: OrchestratorResponseProto,
  signal: AbortSignal,
  deadline: number,
): Promise<Buffer> {
  return encodeInSlices({
    field: 1, // component_data
    elements: response.componentData,
    encode: (row) => ComponentData.encode(row).finish(),
    after: OrchestratorResponseProto.encode({ ...response, componentData: [] }).finish(),
    signal,
    deadline,
  });
}

/** The legacy service definition of this server: sliced request decoding, and pre-encoded answers passed through. */
export const LegacyService = {
  retrieveModelScore: {
    ...OrchestratorService.retrieveModelScore,
    ...legacyDecoding,
    responseSerialize: (response: OrchestratorResponseProto | Buffer): Buffer =>
      Buffer.isBuffer(response) ? response : Buffer.from(OrchestratorResponseProto.encode(response).finish()),
  },
};
