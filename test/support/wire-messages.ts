/**
 * Seeded messages for the hand-written protobuf codecs (orchestrator/wire, vss/wire,
 * platform/protobuf): the byte-equality test (test/platform/protobuf/hand-written-codecs.test.ts)
 * and the benchmark against the generated code (bench/wire) draw from the same makers. `edgy`
 * makers mix in what trips encoders: empty and default fields, negative ints, multi-byte and large
 * UTF-8 strings, NaN / ±Infinity / -0 floats, lengths past one varint byte.
 */
import { DataType } from '../../src/datatypes/data-type.js';
import type { OrchestratorRequestProto } from '../../src/gen/orchestrator/v1/orchestrator.js';
import type { PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../src/gen/orchestrator/v1/types.js';
import type { RemoteComputeRequest } from '../../src/orchestrator/clients/remote-compute.js';
import { cellsLogColumn, type LogColumn, type LogTable } from '../../src/orchestrator/logging/log-batch.js';
import type { LegacyTable } from '../../src/orchestrator/wire/legacy-response-codec.js';
import type {
  AnswerColumn,
  PredictAnswer,
  ScoreTable,
} from '../../src/orchestrator/wire/predict-response-codec.js';
import { seededRandom } from '../../src/platform/random.js';

const SPECIAL_FLOATS = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  -0,
  0,
  3.4e38,
  5e-324,
];
const UNICODE = ['é', 'ß', '日本語', '😀', '\u{10FFFF}', 'a\u0000b', '\u2028'];

export class WireMessages {
  private readonly random: () => number;

  constructor(
    seed: number,
    /** Mix in the edge cases; off for benchmark inputs shaped like production traffic. */
    readonly edgy = true,
  ) {
    this.random = seededRandom(seed);
  }

  int(below: number): number {
    return Math.floor(this.random() * below);
  }

  chance(p: number): boolean {
    return this.random() < p;
  }

  text(maxLength = 12): string {
    if (this.edgy) {
      const roll = this.random();
      if (roll < 0.15) return '';
      if (roll < 0.3)
        return Array.from({ length: 1 + this.int(4) }, () => UNICODE[this.int(UNICODE.length)]).join('');
      if (roll < 0.33) return 'x'.repeat(200 + this.int(20_000));
    }
    let out = '';
    const length = 1 + this.int(maxLength);
    for (let i = 0; i < length; i++) out += String.fromCharCode(97 + this.int(26));
    return out;
  }

  /** Little-endian float bytes (NaN and infinities among them when edgy). */
  floats(count: number, width: 4 | 8 = 4): Uint8Array {
    const values = width === 4 ? new Float32Array(count) : new Float64Array(count);
    for (let i = 0; i < count; i++)
      values[i] =
        this.edgy && this.chance(0.2)
          ? SPECIAL_FLOATS[this.int(SPECIAL_FLOATS.length)]!
          : this.random() * 2 - 1;
    return new Uint8Array(values.buffer);
  }

  bytes(maxLength = 16): Uint8Array {
    const length = this.edgy && this.chance(0.05) ? 200 + this.int(300) : this.int(maxLength);
    return Uint8Array.from({ length }, () => this.int(256));
  }

  /** A FeatureSchema; negative numbers only when `negative` (the hand-written encoders hand those to the generated one). */
  featureSchema(negative = false): FeatureSchema {
    const dataType = this.edgy && this.chance(0.2) ? 0 : 1 + this.int(20);
    const vectorDim = this.edgy && this.chance(0.5) ? 0 : this.chance(0.1) ? 300_000 : this.int(130);
    return negative && this.chance(0.5)
      ? { name: this.text(), dataType: -1 - this.int(3), vectorDim }
      : { name: this.text(), dataType, vectorDim: negative ? -1 - this.int(1000) : vectorDim };
  }

  private scoreTable(rows: number, columns: number): ScoreTable {
    const schema = Array.from({ length: columns }, () => this.featureSchema());
    const made: AnswerColumn[] = schema.map((_, c) => {
      if (c % 2 === 0) return { width: 4, data: this.floats(rows) };
      const values = Array.from({ length: rows }, () => Buffer.from(this.text()));
      return { width: undefined, value: (row: number) => values[row]! };
    });
    const errors = Array.from({ length: rows }, () => (this.chance(0.2) ? this.text() : ''));
    return { schema, columns: made, rows, rowError: (row) => errors[row]! };
  }

  predictAnswer(rows: number, columns = 3): PredictAnswer {
    const empty = (): ScoreTable => this.scoreTable(0, 0);
    return {
      trackingId: this.text(),
      servedModelConfigId: this.chance(0.2) ? '' : this.text(),
      target: this.scoreTable(rows, columns),
      pair: this.edgy && this.chance(0.5) ? this.scoreTable(this.int(rows + 1), columns) : empty(),
      slate: this.edgy && this.chance(0.5) ? this.scoreTable(this.int(rows + 1), 1) : empty(),
    };
  }

  predictRequest(targets: number, values = 3): PredictRequest {
    const indices = () =>
      Array.from({ length: this.int(6) }, () =>
        this.edgy && this.chance(0.2) ? -1 - this.int(2 ** 31 - 1) : this.int(targets),
      );
    return {
      modelConfigId: this.text(),
      trackingId: this.text(),
      contextFeatures: Array.from({ length: this.int(3) }, () => ({
        ...this.featureSchema(),
        value: this.floats(1),
      })),
      targetInputSchema: Array.from({ length: values }, () => this.featureSchema()),
      targets: Array.from({ length: targets }, () => ({
        id: this.text(),
        featureValues: Array.from({ length: values }, (_, v) => (v % 2 ? this.bytes() : this.floats(1))),
      })),
      pairInputSchema: [this.featureSchema()],
      pairs: Array.from({ length: this.edgy ? this.int(targets + 1) : 0 }, () => ({
        firstTargetIndex: indices()[0] ?? 0,
        secondTargetIndex: this.edgy && this.chance(0.2) ? -5 : this.int(targets),
        featureValues: [this.floats(1)],
      })),
      slateInputSchema: [this.featureSchema()],
      slates: Array.from({ length: this.edgy ? this.int(targets + 1) : 0 }, () => ({
        slateTargetIndices: indices(),
        featureValues: this.chance(0.5) ? [] : [this.bytes()],
      })),
      returnTargetScores: this.chance(0.5),
    };
  }

  legacyRequest(ids: number): OrchestratorRequestProto {
    const entity = () => ({
      entity: this.text(),
      ids: Array.from({ length: ids }, () => this.text()),
      features: Array.from({ length: this.int(3) }, () => ({
        name: this.text(),
        idsFeatureValue: Array.from({ length: this.int(ids + 1) }, () => this.text()),
      })),
    });
    return {
      entities: Array.from({ length: this.edgy ? this.int(3) : 1 }, entity),
      modelConfigId: this.text(),
      trackingId: this.text(),
    };
  }

  legacyTable(rows: number, columns = 3): LegacyTable {
    const cells = Array.from({ length: columns }, () => Array.from({ length: rows }, () => this.text()));
    const failed = Array.from({ length: rows }, () => (this.chance(0.1) ? this.text() : ''));
    let count = 0;
    return {
      names: Array.from({ length: columns }, () => this.text()),
      renderers: cells.map((column) => (row: number) => column[row]!),
      rows,
      servedModelConfigId: this.chance(0.2) ? '' : this.text(),
      errors: {
        check: (row) => {
          if (failed[row]) count++;
        },
        message: () => (count === 0 ? '' : `${count} rows failed`),
      },
    };
  }

  /** Logged columns: fixed-width FP32 / FP64 / FP32_VECTOR and variable STRING ones, some cells defaulted. */
  logTable(rows: number, columns = 4): LogTable {
    const made: LogColumn[] = [];
    for (let c = 0; c < columns; c++) {
      const defaulted = new Set(Array.from({ length: this.int(rows / 4 + 1) }, () => this.int(rows)));
      const isDefaulted = (row: number) => defaulted.has(row);
      if (c % 4 === 3) {
        const cells = Array.from({ length: rows }, () => Buffer.from(this.text()));
        made.push(
          cellsLogColumn({ name: `s${c}`, dataType: DataType.STRING, vectorDim: 0 }, cells, isDefaulted),
        );
        continue;
      }
      const [dataType, vectorDim, width] = (
        [
          [DataType.FP32, 0, 4],
          [DataType.FP64, 0, 8],
          [DataType.FP32_VECTOR, 8, 32],
        ] as const
      )[c % 4]!;
      const data = this.floats((rows * width) / 4);
      made.push({
        spec: { name: `f${c}`, dataType, vectorDim },
        value: (row) => data.subarray(row * width, (row + 1) * width),
        isDefaulted,
        fixed: { width, data },
      });
    }
    const start = this.edgy ? this.int(Math.max(1, rows / 4)) : 0;
    return { columns: made, start: Math.min(start, rows), end: rows };
  }

  computeRequest(rows: number, columns = 3): RemoteComputeRequest {
    const fp32 = this.edgy ? this.chance(0.5) : true;
    return {
      computeId: this.edgy && this.chance(0.2) ? '' : this.text(),
      schema: ['id', ...Array.from({ length: columns }, () => this.text())],
      ids: Array.from({ length: rows }, () => this.text()),
      columns: Array.from({ length: columns }, () =>
        fp32 ? new Float32Array(this.floats(rows, 4).buffer) : new Float64Array(this.floats(rows, 8).buffer),
      ),
      dataType: fp32 ? 'FP32' : 'FP64',
    };
  }
}
