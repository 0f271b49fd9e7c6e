import { logisticRanker, textEcho, twoHeadRanker, typedRanker, writeModel } from './onnx-builder.js';

/** Features of the demo rankers' `features` input (`[N, 16]` FP32). */
export const demoRankerFeatures = 16;

export interface WrittenModel {
  name: string;
  version: number;
  path: string;
  description: string;
}

/**
 * Writes the demo repository: `ranker` (versions 1 and 2, seeds 1 and 2, so an unversioned request
 * gets 2), `ranker_two_head`, `typed_ranker` (with a config.json) and `text_echo`.
 */
export function writeDemoModels(repository: string): WrittenModel[] {
  const k = demoRankerFeatures;
  const models: Array<Omit<WrittenModel, 'path'> & { bytes: Uint8Array; config?: { maxBatchSize: number } }> =
    [
      {
        name: 'ranker',
        version: 1,
        bytes: logisticRanker({ features: k, seed: 1 }).bytes,
        description: `score = sigmoid(features·W + b); features FP32 [N, ${k}] → score FP32 [N, 1]`,
      },
      {
        name: 'ranker',
        version: 2,
        bytes: logisticRanker({ features: k, seed: 2 }).bytes,
        description: 'the same with other weights',
      },
      {
        name: 'ranker_two_head',
        version: 1,
        bytes: twoHeadRanker({ features: k }).bytes,
        description: `features FP32 [N, ${k}] → score FP32 [N, 1], embedding FP32 [N, 2]`,
      },
      {
        name: 'typed_ranker',
        version: 1,
        bytes: typedRanker({ ids: 4 }).bytes,
        config: { maxBatchSize: 1024 },
        description:
          'ids INT64 [N, 4], scale FP16 [N, 1] → score FP16 [N, 1], id_sum INT64 [N, 1]; at most 1024 rows',
      },
      {
        name: 'text_echo',
        version: 1,
        bytes: textEcho().bytes,
        description: 'text BYTES [N, 1] → text_out BYTES [N, 1]',
      },
    ];
  return models.map(({ bytes, config, ...model }) => ({
    ...model,
    path: writeModel(repository, model.name, model.version, bytes, config),
  }));
}
