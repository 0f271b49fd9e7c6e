/**
 * What the console's model pages read and do, in one place for the ops server's routes: the configs
 * and their changes (model-configs.ts), each live config's DAG, the live traffic, and example
 * requests. Built by the orchestrator part over its own registry, store, traffic and feature store
 * client.
 */
import { notFound } from '../../platform/errors.js';
import { quote } from '../../platform/quote.js';
import type { FeatureFetcher } from '../clients/feature-fetcher.js';
import type { ModelRegistry } from '../config/index.js';
import type { ShadowFigures } from '../shadow/shadow-figures.js';
import type { ModelTraffic, ModelTrafficStats } from '../traffic/model-traffic.js';
import { type ExamplePattern, type ExampleRequest, exampleRequest } from './example-request.js';
import type { ModelConfigs } from './model-configs.js';
import { type ModelDag, modelDag } from './model-dag.js';
import type { ShadowFiguresAnswer } from './shadow-schemas.js';

export interface ModelConsoleOptions {
  configs: ModelConfigs;
  registry: ModelRegistry<unknown>;
  traffic: ModelTraffic;
  /** The feature store the example requests' ids are looked up in. */
  featureFetcher?: FeatureFetcher;
  /** Shadow pairs' comparison figures (docs/orchestrator.md "Shadow configs"). */
  shadows?: ShadowFigures;
}

export class ModelConsole {
  readonly configs: ModelConfigs;

  constructor(private readonly options: ModelConsoleOptions) {
    this.configs = options.configs;
  }

  /** The DAG of the version serving `id`. */
  dag(id: string): ModelDag {
    return modelDag(this.live(id).model);
  }

  /** Requests, errors and latencies of the last minute, for every live model, its components and its split's arms. */
  stats(): { window_s: number; models: ModelTrafficStats[] } {
    const { registry, traffic } = this.options;
    return traffic.stats(
      registry.ids().map((id) => {
        const { model } = registry.require(id);
        return {
          id,
          components: [...model.components.values()].map((plan) => ({ name: plan.name, kind: plan.kind })),
          arms: model.config.split?.arms.map((arm) => arm.model_config_id),
        };
      }),
    );
  }

  example(id: string, pattern: ExamplePattern): Promise<ExampleRequest> {
    return exampleRequest(this.live(id).model, pattern, this.options.featureFetcher);
  }

  /**
   * How `shadow` answers compared with `primary` over the recent mirrored requests: zeros while
   * nothing was mirrored yet, NOT_FOUND when the primary neither names that shadow nor ever did.
   */
  shadow(primary: string, shadow: string): ShadowFiguresAnswer {
    const block = this.options.registry.get(primary)?.model.config.shadow;
    const active = block?.model_config_id === shadow;
    const figures = this.options.shadows?.get(primary, shadow);
    if (figures === undefined && !active)
      throw notFound(
        `model config ${quote(primary)} has no shadow ${quote(shadow)}: its serving version names ${block ? quote(block.model_config_id) : 'none'}`,
        'shadow',
      );
    return {
      primary,
      shadow,
      active,
      percentage: active ? block.percentage : null,
      k: active ? block.k : null,
      sampled: 0,
      dropped: { queue_full: 0, unknown_shadow: 0 },
      failed: 0,
      compared: 0,
      window: 0,
      overlap_at_k: null,
      kendall_tau: null,
      mean_abs_diff: null,
      max_abs_diff: null,
      latency_diff_ms: {},
      last: null,
      ...figures,
    };
  }

  private live(id: string) {
    const snapshot = this.options.registry.get(id);
    if (snapshot === undefined)
      throw notFound(`model config ${quote(id)} is not serving (no valid version loaded)`, 'model_config_id');
    return snapshot;
  }
}
