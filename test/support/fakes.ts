/** In-process stand-ins for the feature store and a model server, behind the same ports as the gRPC clients. */

import { DataType } from '../../src/datatypes/data-type.js';
import type {
  FeatureFetcher,
  FeatureQuery,
  FeatureRows,
  InferRequest,
  ModelInferer,
  Tensor,
} from '../../src/orchestrator/clients/index.js';

/** entity → key (parts joined by `|`) → `group:feature` → value bytes. */
export type FeatureData = Record<string, Record<string, Record<string, Uint8Array>>>;

export class FakeFeatureStore implements FeatureFetcher {
  calls = 0;
  keysRequested = 0;
  /** Return an Error to fail that call. */
  failWhen: (query: FeatureQuery, call: number) => Error | undefined = () => undefined;

  constructor(private readonly data: FeatureData) {}

  async retrieve(query: FeatureQuery): Promise<FeatureRows> {
    const call = ++this.calls;
    this.keysRequested += query.keys.length;
    const failure = this.failWhen(query, call);
    if (failure) throw failure;
    const entity = this.data[query.entity] ?? {};
    return query.keys.map((key) => {
      const row = entity[key.join('|')];
      if (!row) return undefined;
      return query.featureGroups.flatMap((g) =>
        g.features.map((f) => row[`${g.label}:${f}`] ?? new Uint8Array(0)),
      );
    });
  }
}

/**
 * A linear model: every input is FP32 `[rows, k]`; output `score` is FP32 `[rows, 1]` = Σ w·x (or
 * the weights' length must match k). Counts calls per endpoint; `failWhen` fails chosen calls.
 */
export class FakeLinearModel implements ModelInferer {
  calls = 0;
  readonly perTarget = new Map<string, number>();
  failWhen: (call: number, request: InferRequest) => Error | undefined = () => undefined;

  constructor(private readonly weights: readonly number[]) {}

  async infer(target: string, request: InferRequest): Promise<readonly Tensor[]> {
    const call = ++this.calls;
    this.perTarget.set(target, (this.perTarget.get(target) ?? 0) + 1);
    const failure = this.failWhen(call, request);
    if (failure) throw failure;
    const input = request.inputs[0]!;
    const [rows, k] = [input.shape[0]!, input.shape[1]!];
    const x = new Float32Array(input.data.buffer, input.data.byteOffset, rows * k);
    const out = new Float32Array(rows);
    for (let r = 0; r < rows; r++) {
      let sum = 0;
      for (let j = 0; j < k; j++) sum += this.weights[j]! * x[r * k + j]!;
      out[r] = sum;
    }
    return [{ name: 'score', dataType: DataType.FP32, shape: [rows, 1], data: new Uint8Array(out.buffer) }];
  }
}
