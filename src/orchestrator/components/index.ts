import type { Cache } from '../../platform/cache/index.js';
import { LatticeError } from '../../platform/errors.js';
import type { Metrics } from '../../platform/metrics/index.js';
import type { FeatureFetcher, ModelInferer, RemoteCompute } from '../clients/index.js';
import type { ComponentBuilder } from '../config/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { ComputeComponent } from './compute-component.js';
import { FeatureCache, featureCacheTtlMs, featureLayout } from './feature-cache.js';
import { FeatureComponent } from './feature-component.js';
import { ModelServingComponent } from './model-serving-component.js';

export { ComputeComponent } from './compute-component.js';
export { FeatureComponent } from './feature-component.js';
export { ModelServingComponent, routeEndpoint } from './model-serving-component.js';

export interface ComponentClients {
  featureFetcher?: FeatureFetcher;
  modelInferer?: ModelInferer;
  /** The numerix client, for compute components with `compute_id` + `target`. */
  remoteCompute?: RemoteCompute;
  /** Where feature components with `cache.enabled` keep entities (memory or Redis), and the metrics for hits and misses. */
  featureCache?: { cache: Cache; metrics: Metrics };
}

/** Builds each configured component by kind, on the clients the process has. */
export function createComponentBuilder(clients: ComponentClients): ComponentBuilder<ExecutionContext> {
  return (plan, model) => {
    switch (plan.kind) {
      case 'feature': {
        if (!clients.featureFetcher)
          throw new LatticeError('FAILED_PRECONDITION', 'no feature store client is configured');
        const { config } = model;
        const cache =
          plan.config.cache?.enabled && clients.featureCache
            ? new FeatureCache(
                clients.featureCache.cache,
                clients.featureCache.metrics,
                config.model_config_id,
                config.cache.version,
                plan.name,
                featureLayout(plan.config),
                featureCacheTtlMs(plan.config, config),
              )
            : undefined;
        return new FeatureComponent(plan.config, plan.writes, clients.featureFetcher, cache);
      }
      case 'model':
        if (!clients.modelInferer)
          throw new LatticeError('FAILED_PRECONDITION', 'no model serving client is configured');
        return new ModelServingComponent(plan.config, clients.modelInferer);
      case 'compute':
        if (plan.config.expression === undefined && !clients.remoteCompute) {
          throw new LatticeError(
            'FAILED_PRECONDITION',
            'remote compute (compute_id) needs the numerix client, not configured here',
          );
        }
        return new ComputeComponent(plan.config, clients.remoteCompute);
    }
  };
}
