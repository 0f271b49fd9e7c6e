/**
 * A slate model (`slate: true`) is called once per slate on that slate's target rows. The target
 * columns it reads are converted to the input's element type once per request: they were converted
 * whole for every slate (a column of another type than the input's, 100,000 pairs over 75,000
 * targets: 7.5 billion element conversions for one request).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { InferRequest, ModelInferer, Tensor } from '../../../src/orchestrator/clients/index.js';
import { ModelServingComponent } from '../../../src/orchestrator/components/model-serving-component.js';
import { modelServingComponentSchema } from '../../../src/orchestrator/config/schema.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import {
  ComponentMatrix,
  MatrixLayout,
  SlateData,
} from '../../../src/orchestrator/matrix/component-matrix.js';

/** Answers each call with one row: the sum of every input element it was sent. */
class SummingModel implements ModelInferer {
  calls = 0;
  async infer(_target: string, request: InferRequest): Promise<readonly Tensor[]> {
    this.calls++;
    let sum = 0;
    for (const input of request.inputs) {
      const elements = new Float32Array(input.data.slice().buffer);
      for (const x of elements) sum += x;
    }
    return [
      {
        name: 'y',
        dataType: DataType.FP32,
        shape: [1, 1],
        data: new Uint8Array(Float32Array.of(sum).buffer),
      },
    ];
  }
}

test('a slate model converts the target columns it reads once per request, not once per slate', async () => {
  const targets = 2_000;
  const layout = new MatrixLayout([
    { name: 'price', dataType: DataType.FP64, vectorDim: 0 }, // FP64 into an FP32 input: converted
    { name: 'quality', dataType: DataType.INT32, vectorDim: 0 },
  ]);
  const matrix = new ComponentMatrix(layout, targets);
  const price = matrix.byteColumn('price').float64()!;
  const quality = new Int32Array(
    matrix.byteColumn('quality').data.buffer,
    matrix.byteColumn('quality').data.byteOffset,
    targets,
  );
  for (let r = 0; r < targets; r++) {
    price[r] = r / 4;
    quality[r] = r % 5;
  }
  const pairs = 3_000;
  const indices = Array.from({ length: pairs }, (_, i) => Int32Array.of(i % targets, (i * 7 + 1) % targets));
  const slate = new SlateData(
    new MatrixLayout([{ name: 'lead', dataType: DataType.FP32, vectorDim: 0 }]),
    indices,
  );
  // Counts every look-up of a target column: once per request and feature, whatever the slate count.
  let lookups = 0;
  const byteColumn = matrix.byteColumn.bind(matrix);
  matrix.byteColumn = (name: string) => {
    lookups++;
    return byteColumn(name);
  };
  const model = new SummingModel();
  const component = new ModelServingComponent(
    modelServingComponentSchema.parse({
      name: 'lead',
      model_name: 'sum',
      slate: true,
      endpoints: [{ target: 'local', percentage: 100 }],
      inputs: [{ name: 'features', data_type: 'FP32', shape: [2], features: ['price', 'quality'] }],
      outputs: [{ name: 'y', data_type: 'FP32', columns: ['lead'] }],
    }),
    model,
  );
  const context = { matrix, slate, deadline: Number.POSITIVE_INFINITY } as unknown as ExecutionContext;
  await component.run(context, new AbortController().signal);
  assert.equal(model.calls, pairs);
  const lead = slate.byteColumn('lead').float32()!;
  for (const s of [0, 1, 1234, pairs - 1]) {
    const [a, b] = indices[s]!;
    assert.equal(lead[s], Math.fround(price[a!]! + quality[a!]! + price[b!]! + quality[b!]!), `slate ${s}`);
  }
  assert.ok(lookups < 20, `${lookups} target column look-ups for ${pairs} slates`);
});
