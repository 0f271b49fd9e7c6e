/**
 * What the generated code writes for the inputs of the hand-written encoders: the message objects
 * the generated encoder needs, built from the same rows, then encoded. The byte-equality test
 * compares against these and bench/wire times them.
 */
import { defaultValue } from '../../src/datatypes/codecs.js';
import { NumerixRequestProto } from '../../src/gen/numerix/numerix.js';
import { type LogRow, LogRows } from '../../src/gen/orchestrator/v1/log.js';
import { type ComponentData, OrchestratorResponseProto } from '../../src/gen/orchestrator/v1/orchestrator.js';
import type { RemoteComputeRequest } from '../../src/orchestrator/clients/remote-compute.js';
import type { LogTable } from '../../src/orchestrator/logging/log-batch.js';
import type { LegacyTable } from '../../src/orchestrator/wire/legacy-response-codec.js';

export function generatedLogRows(table: LogTable): Uint8Array {
  const rows: LogRow[] = [];
  for (let row = table.start; row < table.end; row++) {
    const values: Uint8Array[] = [];
    const defaultedColumns: number[] = [];
    table.columns.forEach((column, c) => {
      if (column.isDefaulted(row)) {
        values.push(defaultValue(column.spec.dataType, column.spec.vectorDim));
        defaultedColumns.push(c);
      } else values.push(column.value(row));
    });
    rows.push({ values, defaultedColumns });
  }
  return LogRows.encode({ rows }).finish();
}

export function generatedComputeRequest(request: RemoteComputeRequest): Uint8Array {
  const columns = request.columns.map((c) => new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
  const width = request.dataType === 'FP32' ? 4 : 8;
  return NumerixRequestProto.encode({
    entityScoreData: {
      schema: [...request.schema],
      entityScores: request.ids.map((id, r) => ({
        byteData: {
          values: [Buffer.from(id), ...columns.map((c) => c.subarray(r * width, (r + 1) * width))],
        },
      })),
      computeId: request.computeId,
      dataType: request.dataType === 'FP32' ? 'fp32' : 'fp64',
    },
  }).finish();
}

/** The legacy answer as ComponentData objects: the header row, a row per matrix row, the rows' error. */
export function generatedLegacyResponse(table: LegacyTable): OrchestratorResponseProto {
  const componentData: ComponentData[] = [{ data: [...table.names] }];
  for (let row = 0; row < table.rows; row++) {
    componentData.push({ data: table.renderers.map((render) => render(row)) });
    table.errors.check(row);
  }
  return {
    componentData,
    error: { message: table.errors.message() },
    servedModelConfigId: table.servedModelConfigId,
  };
}

/** {@link generatedLegacyResponse}, encoded at once by the generated encoder. */
export function generatedLegacyAnswer(table: LegacyTable): Uint8Array {
  return OrchestratorResponseProto.encode(generatedLegacyResponse(table)).finish();
}
