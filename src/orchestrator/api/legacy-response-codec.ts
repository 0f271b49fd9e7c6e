/**
 * `orchestrator.v1.Orchestrator` (the legacy entity API) as this server serves it: requests are
 * counted before they are decoded, large ones in time slices (request-decoding.ts); a large answer
 * (a ComponentData row per id, up to 100,000) is encoded in time slices by the handler, which hands
 * grpc-js the finished bytes.
 */
import {
  ComponentData,
  OrchestratorResponseProto,
  OrchestratorService,
} from '../../gen/orchestrator/v1/orchestrator.js';
import { fieldSize, writeVarint } from '../../platform/protobuf/wire.js';
import { nextTurn, sliceOver, stopIfOver } from '../../platform/scheduling/index.js';
import { legacyDecoding } from './request-decoding.js';

/** `component_data` (field 1, length-delimited): its tag byte. */
const COMPONENT_DATA_TAG = (1 << 3) | 2;
/** Rows encoded between two looks at the clock. */
const ROWS_PER_PAUSE = 1024;

/**
 * The bytes `OrchestratorResponseProto.encode(response)` writes, built a row at a time: each row by
 * the generated ComponentData encoder behind its tag and length, then the other fields (numbered
 * after `component_data`) by the generated message encoder, so the order is the generated one.
 */
export async function encodeLegacyResponseInSlices(
  response: OrchestratorResponseProto,
  signal: AbortSignal,
  deadline: number,
): Promise<Buffer> {
  const rows = response.componentData;
  const parts: Uint8Array[] = new Array(rows.length);
  let total = 0;
  for (let i = 0; i < rows.length; i++) {
    if (i % ROWS_PER_PAUSE === ROWS_PER_PAUSE - 1) {
      if (sliceOver()) await nextTurn(signal, deadline);
      else stopIfOver(signal, deadline);
    }
    const part = ComponentData.encode(rows[i]!).finish();
    parts[i] = part;
    total += fieldSize(part.length);
  }
  const rest = OrchestratorResponseProto.encode({ ...response, componentData: [] }).finish();
  const out = Buffer.allocUnsafe(total + rest.length);
  let at = 0;
  for (const part of parts) {
    out[at++] = COMPONENT_DATA_TAG;
    at = writeVarint(out, at, part.length);
    out.set(part, at);
    at += part.length;
  }
  out.set(rest, at);
  return out;
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
