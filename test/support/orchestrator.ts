/** Builders for orchestrator tests: a registry on any ConfigStore, and typed request values. */

import { encodeValue } from '../../src/datatypes/codecs.js';
import { DataType } from '../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import type { DataType as WireType } from '../../src/gen/orchestrator/v1/types.js';
import { ComputeComponent } from '../../src/orchestrator/components/compute-component.js';
import { type ComponentBuilder, ModelRegistry } from '../../src/orchestrator/config/index.js';
import type { ExecutionContext } from '../../src/orchestrator/engine/execution-context.js';
import type { ConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';

export const computeOnlyBuilder: ComponentBuilder<ExecutionContext> = (plan) => {
  if (plan.kind === 'compute') return new ComputeComponent(plan.config);
  throw new Error(`no ${plan.kind} component in this test`);
};

export function testRegistry(
  store: ConfigStore,
  buildComponent = computeOnlyBuilder,
  metrics = new Metrics(),
) {
  return new ModelRegistry<ExecutionContext>({
    store,
    buildComponent,
    logger: createLogger('test', { level: 'silent' }),
    metrics,
  });
}

export const fp32 = (x: number) => Buffer.from(encodeValue(DataType.FP32, x));
export const fp64 = (x: number) => Buffer.from(encodeValue(DataType.FP64, x));
export const int32 = (x: number) => Buffer.from(encodeValue(DataType.INT32, x));
export const schema = (name: string, type: DataType, vectorDim = 0) => ({
  name,
  dataType: type as number as WireType,
  vectorDim,
});

/** A model scored by one in-process expression over request features: score = price × 2 + bonus. */
export function blendOnly(
  id = 'blend_only',
  expression = 'price 2 * bonus +',
  extra: Record<string, unknown> = {},
) {
  return {
    model_config_id: id,
    target_id_column: 'item_id',
    component_dependency: { blend: [] },
    compute_components: [
      {
        name: 'blend',
        expression,
        score_mapping: { price: 'price', bonus: 'bonus' },
        output_column: 'score',
        data_type: 'FP64',
        ...extra,
      },
    ],
    response: { columns: ['score'] },
  };
}

/** A Predict request holding only what `fields` set: no features, targets, pairs or slates. */
export function predictRequest(fields: Partial<PredictRequest>): PredictRequest {
  return {
    modelConfigId: '',
    trackingId: 't',
    contextFeatures: [],
    targetInputSchema: [],
    targets: [],
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
    ...fields,
  };
}

/** A request to `blend_only` ({@link blendOnly}): a `bonus` of 0.5 in the context, an FP32 `price` per target. */
export function blendOnlyRequest(prices: number[], extra: Partial<PredictRequest> = {}): PredictRequest {
  return predictRequest({
    modelConfigId: 'blend_only',
    trackingId: 't1',
    contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(0.5) }],
    targetInputSchema: [schema('price', DataType.FP32)],
    targets: prices.map((p, i) => ({ id: `item${i}`, featureValues: [fp32(p)] })),
    ...extra,
  });
}
