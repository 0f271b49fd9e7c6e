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
import type { ModelTraffic, ModelTrafficStats } from '../traffic/model-traffic.js';
import { type ExamplePattern, type ExampleRequest, exampleRequest } from './example-request.js';
import type { ModelConfigs } from './model-configs.js';
import { type ModelDag, modelDag } from './model-dag.js';

export interface ModelConsoleOptions {
  configs: ModelConfigs;
  registry: ModelRegistry<unknown>;
  traffic: ModelTraffic;
  /** The feature store the example requests' ids are looked up in. */
  featureFetcher?: FeatureFetcher;
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

  /** Requests, errors and latencies of the last minute, for every live model and its components. */
  stats(): { window_s: number; models: ModelTrafficStats[] } {
    const { registry, traffic } = this.options;
    return traffic.stats(
      registry.ids().map((id) => ({
        id,
        components: [...registry.require(id).model.components.values()].map((plan) => ({
          name: plan.name,
          kind: plan.kind,
        })),
      })),
    );
  }

  example(id: string, pattern: ExamplePattern): Promise<ExampleRequest> {
    return exampleRequest(this.live(id).model, pattern, this.options.featureFetcher);
  }

  private live(id: string) {
    const snapshot = this.options.registry.get(id);
    if (snapshot === undefined)
      throw notFound(`model config ${quote(id)} is not serving (no valid version loaded)`, 'model_config_id');
    return snapshot;
  }
}
