/**
 * The orchestrator's gRPC API in the test's own process, for the API tests: model configs in a file
 * store of its own, and model calls answered by a ModelInferer the test controls. Kept apart from
 * orchestrator.ts so that the unit tests which use those builders do not load the gRPC server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataType } from '../../src/datatypes/data-type.js';
import {
  type OrchestratorServerOptions,
  type RunningOrchestrator,
  startOrchestrator,
} from '../../src/orchestrator/api/index.js';
import type { InferRequest, ModelInferer, Tensor } from '../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../src/orchestrator/components/index.js';
import { createConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { blendOnly } from './orchestrator.js';

/**
 * The model server behind the `double` component of `doublerModel`: y = 2 × x, one FP32 row per
 * target; `slow` holds calls until the signal aborts (counting them in `cancelled`), `broken` fails.
 */
export class DoublerModel implements ModelInferer {
  mode: 'ok' | 'slow' | 'broken' = 'ok';
  cancelled = 0;
  async infer(
    _target: string,
    request: InferRequest,
    options: { signal: AbortSignal },
  ): Promise<readonly Tensor[]> {
    if (this.mode === 'broken') throw new Error('model server exploded');
    if (this.mode === 'slow') {
      await new Promise<void>((_, reject) =>
        options.signal.addEventListener('abort', () => {
          this.cancelled++;
          reject(options.signal.reason);
        }),
      );
    }
    const input = request.inputs[0]!;
    const rows = input.shape[0]!;
    const x = new Float32Array(input.data.buffer, input.data.byteOffset, rows);
    const y = Float32Array.from(x, (v) => 2 * v);
    return [{ name: 'y', dataType: DataType.FP32, shape: [rows, 1], data: new Uint8Array(y.buffer) }];
  }
}

/**
 * The `doubler` model config: feature_init → double (a model call, `doubled` = 2 × price, answered by a DoublerModel) → `compute`,
 * a compute component over what the model answered.
 */
export function doublerModel(
  compute: { name: string } & Record<string, unknown>,
  requestFeatures: string[],
  columns: string[],
) {
  return {
    model_config_id: 'doubler',
    target_id_column: 'item_id',
    component_dependency: { double: [compute.name], [compute.name]: [] },
    model_serving_components: [
      {
        name: 'double',
        model_name: 'doubler',
        endpoints: [{ target: 'local', percentage: 100 }],
        inputs: [{ name: 'x', data_type: 'FP32', shape: [1], features: ['price'] }],
        outputs: [{ name: 'y', data_type: 'FP32', columns: ['doubled'] }],
      },
    ],
    compute_components: [compute],
    request_features: requestFeatures,
    response: { columns },
  };
}

/**
 * An orchestrator on a free loopback port serving `doubler` (the test's doublerModel, its model calls
 * sent to `modelInferer`), `blend_only` and `fragile`; `options` over the test defaults.
 */
export async function startDoublerOrchestrator(
  doubler: ReturnType<typeof doublerModel>,
  modelInferer: ModelInferer,
  options: Partial<OrchestratorServerOptions> = {},
): Promise<RunningOrchestrator> {
  const store = await createConfigStore({ kind: 'file', dir: mkdtempSync(join(tmpdir(), 'lattice-api-')) });
  await store.put('models/doubler', doubler);
  await store.put('models/blend_only', blendOnly());
  // Division by zero: the non-required blend fails on every request.
  await store.put('models/fragile', blendOnly('fragile', 'price bonus /'));
  return startOrchestrator({
    host: '127.0.0.1',
    port: 0,
    store,
    buildComponent: createComponentBuilder({ modelInferer }),
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    ...options,
  });
}
