/** A fake numerix server: a few named expressions evaluated over byte rows, answered like numerix. */
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import {
  type EntityScoreData,
  type NumerixRequestProto,
  type NumerixResponseProto,
  NumerixService,
} from '../../../src/gen/numerix/numerix.js';
import { startServer, type TestServer } from './grpc-fixtures.js';

/** compute_id → score of one row's variables (by schema name); throwing fails the whole request. */
const expressions: Record<string, (v: Record<string, number>) => number> = {
  blend: (v) => v.price! * 2 + v.bonus!,
  ratio: (v) => {
    if (v.bonus === 0) throw new Error('division by zero at row 0');
    return v.price! / v.bonus!;
  },
};

export class FakeNumerix {
  server!: TestServer;
  requests: EntityScoreData[] = [];
  /** Rewrites an answer, for the protocol-violation tests. */
  tamper: ((response: NumerixResponseProto) => NumerixResponseProto) | undefined;

  get target(): string {
    return this.server.target;
  }

  async start(): Promise<this> {
    this.server = await startServer((s) =>
      s.addService(NumerixService, {
        compute: (
          call: ServerUnaryCall<NumerixRequestProto, NumerixResponseProto>,
          cb: sendUnaryData<NumerixResponseProto>,
        ) => {
          const data = call.request.entityScoreData!;
          this.requests.push(data);
          const response = this.answer(data);
          cb(null, this.tamper ? this.tamper(response) : response);
        },
      }),
    );
    return this;
  }

  private answer(data: EntityScoreData): NumerixResponseProto {
    const expression = expressions[data.computeId];
    if (!expression)
      return { error: { message: `No expression configured for compute_id: ${data.computeId}` } };
    const fp32 = data.dataType === 'fp32' || data.dataType === 'f32';
    try {
      const computationScores = data.entityScores.map((row) => {
        const values = row.byteData!.values;
        const variables: Record<string, number> = {};
        data.schema.forEach((name, c) => {
          if (c > 0)
            variables[name] = fp32
              ? Buffer.from(values[c]!).readFloatLE(0)
              : Buffer.from(values[c]!).readDoubleLE(0);
        });
        const score = Buffer.alloc(fp32 ? 4 : 8);
        if (fp32) score.writeFloatLE(expression(variables));
        else score.writeDoubleLE(expression(variables));
        return { byteData: { values: [values[0]!, score] } };
      });
      return { computationScoreData: { schema: [data.schema[0]!, 'score'], computationScores } };
    } catch (err) {
      return { error: { message: (err as Error).message } };
    }
  }
}
