/** Model configuration documents for tests: the design's example and small variations of it. */
import type { ModelConfigInput } from '../../src/orchestrator/config/index.js';

/** The example of orchestrator.md "Model configuration", verbatim in content. */
export function catalogRanker(): ModelConfigInput & Record<string, unknown> {
  return {
    model_config_id: 'catalog_ranker',
    target_id_column: 'catalog_id',
    component_dependency: {
      catalog_features: ['user_x_category', 'ranker'],
      user_features: ['ranker'],
      user_x_category: ['ranker'],
      ranker: ['blend'],
      blend: [],
    },
    cache: { version: 3, ttl_seconds: 300 },
    feature_components: [
      {
        name: 'catalog_features',
        entity: 'catalog',
        fs_keys: [{ schema: ['catalog_id'], col: 'catalog_id' }],
        feature_groups: [
          { label: 'stats', data_type: 'FP32', features: ['price', 'ctr_7d'] },
          { label: 'attributes', data_type: 'INT32', features: ['category_id'] },
        ],
        batch_size: 100,
        deadline_ms: 30,
        cache: { enabled: true, ttl_seconds: 600 },
      },
      {
        name: 'user_features',
        entity: 'user',
        fs_keys: [{ schema: ['user_id'], col: 'user_id' }],
        feature_groups: [{ label: 'profile', data_type: 'FP32', features: ['age'] }],
      },
      {
        name: 'user_x_category',
        entity: 'user_category',
        fs_keys: [
          { schema: ['user_id'], col: 'user_id' },
          { schema: ['category_id'], col: 'catalog:attributes:category_id' },
        ],
        feature_groups: [{ label: 'agg', data_type: 'FP32', features: ['clicks_30d'] }],
      },
    ],
    model_serving_components: [
      {
        name: 'ranker',
        model_name: 'ctr',
        batch_size: 256,
        deadline_ms: 50,
        endpoints: [
          { target: 'ranker-a:8001', percentage: 90 },
          { target: 'ranker-b:8001', percentage: 10 },
        ],
        inputs: [
          {
            name: 'features',
            data_type: 'FP32',
            shape: [4],
            features: [
              'catalog:stats:price',
              'catalog:stats:ctr_7d',
              'user:profile:age',
              'user_category:agg:clicks_30d',
            ],
          },
        ],
        outputs: [{ name: 'score', data_type: 'FP32', columns: ['ctr'] }],
        calibration: { method: 'platt', a: 1.2, b: -0.3 },
      },
    ],
    compute_components: [
      {
        name: 'blend',
        expression: 'ctr 0.8 * price log 0.2 * +',
        score_mapping: { ctr: 'ctr', price: 'catalog:stats:price' },
        output_column: 'final_score',
        data_type: 'FP32',
      },
    ],
    response: { columns: ['ctr', 'final_score'] },
    logging: {
      logging_perc: 5,
      log_batch_size: 500,
      log_features: [],
      format: 'parquet',
      compression: 'zstd',
    },
  };
}
