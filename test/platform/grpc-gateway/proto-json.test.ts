/**
 * The proto3 JSON mapping of the gateway against the generated code's binary: a request written in
 * JSON (JSON or proto names, base64 bytes, enums by name) is the message the generated code encodes,
 * an answer comes back with its fields at their defaults written out, and a refusal names where in
 * the body it is, as the services name fields (`targets[1].feature_values[0]`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DESCRIPTOR_SET_BASE64 } from '../../../src/gen/descriptor-set.js';
import { PredictRequest, PredictResponse } from '../../../src/gen/orchestrator/v1/predict.js';
import { DataType } from '../../../src/gen/orchestrator/v1/types.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { binaryToJson, descriptorRegistry, jsonToBinary } from '../../../src/platform/grpc-gateway/index.js';

const registry = descriptorRegistry(DESCRIPTOR_SET_BASE64);
const request = registry.getMessage('orchestrator.v1.PredictRequest')!;
const response = registry.getMessage('orchestrator.v1.PredictResponse')!;

test('a request in JSON is the message the generated code encodes', () => {
  const bytes = jsonToBinary(request, {
    model_config_id: 'm',
    contextFeatures: [
      { name: 'user_id', dataType: 'DATA_TYPE_STRING', value: Buffer.from('u1').toString('base64') },
    ],
    targets: [{ id: 'c1', featureValues: [Buffer.from([1, 2]).toString('base64')] }],
    slates: [{ slateTargetIndices: [0] }],
    returnTargetScores: true,
  });
  const expected = PredictRequest.fromPartial({
    modelConfigId: 'm',
    contextFeatures: [{ name: 'user_id', dataType: DataType.DATA_TYPE_STRING, value: Buffer.from('u1') }],
    targets: [{ id: 'c1', featureValues: [Buffer.from([1, 2])] }],
    slates: [{ slateTargetIndices: [0] }],
    returnTargetScores: true,
  });
  assert.deepEqual(Buffer.from(bytes), Buffer.from(PredictRequest.encode(expected).finish()));
  assert.deepEqual(jsonToBinary(request, undefined), new Uint8Array(0), 'no body: the empty message');
});

test('an answer is written with its fields at their defaults', () => {
  const bytes = PredictResponse.encode(
    PredictResponse.fromPartial({
      trackingId: 't',
      targetScores: [{ outputValues: [Buffer.from([0, 0, 0, 0])] }],
    }),
  ).finish();
  assert.deepEqual(binaryToJson(response, bytes), {
    trackingId: 't',
    targetOutputSchema: [],
    targetScores: [{ outputValues: ['AAAAAA=='], error: '' }],
    pairOutputSchema: [],
    pairScores: [],
    slateOutputSchema: [],
    slateScores: [],
    errors: [],
    targetIds: [],
    servedModelConfigId: '',
  });
});

test('a body the mapping refuses is INVALID_ARGUMENT at its path', () => {
  for (const [body, field] of [
    [{ modelConfigId: 5 }, 'model_config_id'],
    [{ bogus: 1 }, 'bogus'],
    [{ targets: [{ id: 'c1' }, { id: 'c2', featureValues: ['AA==', 7] }] }, 'targets[1].feature_values[1]'],
    [{ pairs: [{ firstTargetIndex: 'x' }] }, 'pairs[0].first_target_index'],
    [{ slates: [{ slateTargetIndices: [0, 'a'] }] }, 'slates[0].slate_target_indices[1]'],
    [{ contextFeatures: [{ name: 'u', dataType: 'DATA_TYPE_NOPE' }] }, 'context_features[0].data_type'],
    [{ targets: { id: 'c1' } }, 'targets'],
  ] as const) {
    assert.throws(
      () => jsonToBinary(request, body),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === field,
      `${JSON.stringify(body)} → ${field}`,
    );
  }
});
