/**
 * The proto payload encoder writes LogRows by hand for speed; it must be byte for byte what the
 * generated encoder writes from the same rows, including multi-byte lengths and column indices.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import { protoCodec } from '../../../src/orchestrator/logging/encoders/proto-codec.js';
import {
  cellsLogColumn,
  type LogColumn,
  type LogTable,
} from '../../../src/orchestrator/logging/log-batch.js';
import { seededRandom } from '../../../src/platform/random.js';
import { generatedLogRows as generated } from '../../support/generated-references.js';

function randomTable(random: () => number, columns: number, rows: number): LogTable {
  const made: LogColumn[] = [];
  for (let c = 0; c < columns; c++) {
    const fixed = c % 3 !== 0;
    // Fixed widths of 4, 8 and 32 bytes (a vector: wider than the encoder's byte loop).
    const [fixedType, vectorDim, width] = (
      [
        [DataType.FP32, 0, 4],
        [DataType.FP64, 0, 8],
        [DataType.FP32_VECTOR, 8, 32],
      ] as const
    )[c % 3 === 1 ? Math.floor(c / 3) % 3 : 0]!;
    const spec = fixed
      ? { name: `f${c}`, dataType: fixedType, vectorDim }
      : { name: `s${c}`, dataType: DataType.STRING, vectorDim: 0 };
    // Lengths up to 20,000 bytes: one-, two- and three-byte length varints.
    const lengths = [0, 1, 127, 128, 300, 20_000];
    const cells = Array.from({ length: rows }, () =>
      fixed
        ? Uint8Array.from({ length: width }, () => Math.floor(random() * 256))
        : new Uint8Array(lengths[Math.floor(random() * lengths.length)]!).fill(7),
    );
    const defaulted = Array.from({ length: rows }, () => random() < 0.3);
    const column = cellsLogColumn(spec, cells, (row) => defaulted[row]!);
    made.push(
      fixed
        ? {
            ...column,
            fixed: { width, data: Uint8Array.from(cells.flatMap((cell) => Array.from(cell))) },
          }
        : column,
    );
  }
  return { columns: made, start: Math.min(2, rows), end: rows };
}

test('the hand-written LogRows encoder equals the generated one', () => {
  const random = seededRandom(11);
  // 150 columns: defaulted indices above 127 take two varint bytes.
  for (const [columns, rows] of [
    [1, 1],
    [3, 10],
    [150, 4],
    [7, 300],
    [2, 0],
  ] as const) {
    const table = randomTable(random, columns, rows);
    const entityIds = Array.from({ length: table.end - table.start }, (_, i) => `e${i}`);
    const ours = protoCodec.encode(table, entityIds);
    assert.deepEqual(Buffer.from(ours), Buffer.from(generated(table)), `${columns} × ${rows}`);
    // And it decodes back to the same cells.
    const decoded = protoCodec.decode(
      ours,
      table.columns.map((c) => c.spec),
      entityIds,
    );
    assert.equal(decoded.length, table.end - table.start);
  }
});
