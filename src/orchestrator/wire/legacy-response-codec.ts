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
import { encodeInSlices } from '../../platform/protobuf/sliced-encode.js';
import { fieldSize, writeVarint } from '../../platform/protobuf/wire.js';
import { inChunks } from '../../platform/scheduling/index.js';
import { legacyDecoding } from './request-decoding.js';

/** Tags of OrchestratorResponseProto.component_data (1), .error (2), ComponentData.data (1) and Error.message (1). */
const COMPONENT_DATA = 10;
const ERROR = 18;
const TEXT = 10;
/** OrchestratorResponseProto.served_model_config_id = 60: a two-byte tag (482 as a varint). */
const SERVED = [0xe2, 0x03] as const;

/** A growing output buffer. */
class Output {
  bytes: Buffer;
  at = 0;
  constructor(capacity: number) {
    this.bytes = Buffer.allocUnsafe(capacity);
  }
  reserve(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.bytes.length, this.at + n));
    this.bytes.copy(grown, 0, 0, this.at);
    this.bytes = grown;
  }
}

/** Writes one ComponentData (`texts` as its `data`) as a component_data field. */
function writeRow(out: Output, texts: readonly string[], lengths: number[]): void {
  let body = 0;
  for (let i = 0; i < texts.length; i++) {
    const length = Buffer.byteLength(texts[i]!);
    lengths[i] = length;
    body += fieldSize(length);
  }
  out.reserve(fieldSize(body));
  const bytes = out.bytes;
  let at = out.at;
  bytes[at++] = COMPONENT_DATA;
  at = writeVarint(bytes, at, body);
  for (let i = 0; i < texts.length; i++) {
    bytes[at++] = TEXT;
    at = writeVarint(bytes, at, lengths[i]!);
    at += bytes.write(texts[i]!, at);
  }
  out.at = at;
}

/** A legacy answer still in the matrix: the header row, each column's text for a row, and the rows' `error`. */
export interface LegacyTable {
  readonly names: readonly string[];
  readonly renderers: readonly ((row: number) => string)[];
  readonly rows: number;
  /** Sees every row in order (`check`), then gives the answer's error message. */
  readonly errors: { check(row: number): void; message(): string };
  /** The config that served the request; written after `error`, as field 60. */
  readonly servedModelConfigId: string;
}

/**
 * The bytes `OrchestratorResponseProto.encode(await legacyResponse(context, call))` writes, written
 * straight from the matrix a slice of rows at a time: no ComponentData object, array or writer per
 * row (100,000 of each stayed alive until the answer was encoded). Tested byte for byte against the
 * generated encoder (test/orchestrator/api/legacy-answer-bytes.test.ts).
 */
export async function encodeLegacyAnswerInSlices(
  table: LegacyTable,
  call: { signal: AbortSignal; deadline: number },
): Promise<Buffer> {
  const { names, renderers, rows, errors } = table;
  const out = new Output(64 + (rows + 1) * names.length * 16);
  const lengths = new Array<number>(names.length).fill(0);
  writeRow(out, names, lengths);
  const texts = new Array<string>(names.length).fill('');
  await inChunks(rows, call.signal, call.deadline, (from, to) => {
    for (let row = from; row < to; row++) {
      for (let c = 0; c < renderers.length; c++) texts[c] = renderers[c]!(row);
      writeRow(out, texts, lengths);
      errors.check(row);
    }
  });
  // Error is always present; its message only when not empty (as the generated encoder writes them).
  const message = errors.message();
  const messageLength = Buffer.byteLength(message);
  const errorBody = message === '' ? 0 : fieldSize(messageLength);
  out.reserve(fieldSize(errorBody));
  let at = out.at;
  out.bytes[at++] = ERROR;
  at = writeVarint(out.bytes, at, errorBody);
  if (message !== '') {
    out.bytes[at++] = TEXT;
    at = writeVarint(out.bytes, at, messageLength);
    at += out.bytes.write(message, at);
  }
  out.at = at;
  const served = Buffer.byteLength(table.servedModelConfigId);
  if (served > 0) {
    out.reserve(1 + fieldSize(served));
    at = out.at;
    out.bytes[at++] = SERVED[0];
    out.bytes[at++] = SERVED[1];
    at = writeVarint(out.bytes, at, served);
    at += out.bytes.write(table.servedModelConfigId, at);
  }
  return out.bytes.subarray(0, at);
}

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
