/** Helpers for the feature store tests: a promise-based generated client and a registry of every type. */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { allDataTypes, DataType } from '../../src/datatypes/data-type.js';
import { FeatureRegistry, type RegistryDocument } from '../../src/featurestore/index.js';
import {
  type DecodedResult,
  FeatureServiceClient,
  type Query,
  type Result,
} from '../../src/gen/retrieve/retrieve.js';

export function connect(address: string): FeatureServiceClient {
  return new FeatureServiceClient(address, grpc.credentials.createInsecure());
}

export interface CallAuth {
  callerId?: string;
  token?: string;
  idHeader?: string;
  tokenHeader?: string;
}

function metadataOf(auth: CallAuth = {}): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (auth.callerId !== undefined) metadata.set(auth.idHeader ?? 'caller-id', auth.callerId);
  if (auth.token !== undefined) metadata.set(auth.tokenHeader ?? 'caller-token', auth.token);
  return metadata;
}

export function query(
  entityLabel: string,
  keysSchema: string[],
  keys: string[][],
  groups: Record<string, string[]>,
): Query {
  return {
    entityLabel,
    keysSchema,
    keys: keys.map((cols) => ({ cols })),
    featureGroups: Object.entries(groups).map(([label, featureLabels]) => ({ label, featureLabels })),
  };
}

export function retrieve(client: FeatureServiceClient, request: Query, auth?: CallAuth): Promise<Result> {
  return new Promise((resolve, reject) =>
    client.retrieveFeatures(request, metadataOf(auth), { deadline: Date.now() + 10_000 }, (err, res) =>
      err ? reject(err) : resolve(res),
    ),
  );
}

export function retrieveDecoded(
  client: FeatureServiceClient,
  request: Query,
  auth?: CallAuth,
): Promise<DecodedResult> {
  return new Promise((resolve, reject) =>
    client.retrieveDecodedResult(request, metadataOf(auth), { deadline: Date.now() + 10_000 }, (err, res) =>
      err ? reject(err) : resolve(res),
    ),
  );
}

/** Asserts the call fails with `code` and a message matching `message`. */
export async function rejectsWithStatus(work: Promise<unknown>, code: grpc.status, message?: RegExp) {
  let caught: unknown;
  await assert.rejects(work, (err: unknown) => {
    caught = err;
    return true;
  });
  const error = caught as grpc.ServiceError;
  assert.equal(error.code, code, `expected status ${grpc.status[code]}, got ${error.code}: ${error.details}`);
  if (message) assert.match(error.details, message);
  return error;
}

/** Vector dimension used for every vector feature of `typesRegistry`. */
export const VECTOR_DIM = 3;

/** Feature name for a data type, e.g. `fp32_vector`. */
export const featureNameOf = (type: DataType): string => DataType[type].toLowerCase();

/**
 * An entity `typed` (key `id`) with one group `all` holding a feature of every data type (vectors of
 * dimension 3), an entity `pair` keyed by two parts, and `wide` with two groups.
 */
export function typesRegistryDocument(): RegistryDocument {
  return {
    entities: [
      {
        name: 'typed',
        keys: ['id'],
        feature_groups: [
          {
            name: 'all',
            features: allDataTypes.map((type) => ({
              name: featureNameOf(type),
              data_type: DataType[type],
              ...(DataType[type].endsWith('_VECTOR') ? { vector_dim: VECTOR_DIM } : {}),
            })),
          },
        ],
      },
      {
        name: 'pair',
        keys: ['left', 'right'],
        feature_groups: [{ name: 'g', features: [{ name: 'score', data_type: 'FP32', default: -1 }] }],
      },
      {
        name: 'wide',
        keys: ['id'],
        feature_groups: [
          {
            name: 'a',
            features: [
              { name: 'x', data_type: 'FP32', default: 1.5 },
              { name: 'label', data_type: 'STRING', default: 'none' },
            ],
          },
          {
            name: 'b',
            features: [
              { name: 'n', data_type: 'INT64', default: '9007199254740993' },
              { name: 'flags', data_type: 'BOOL_VECTOR', vector_dim: 10 },
            ],
          },
        ],
      },
    ],
  };
}

export const typesRegistry = (): FeatureRegistry => FeatureRegistry.fromDocument(typesRegistryDocument());

/** A sample value of every type (as encodeValue takes it), dimension 3 for vectors. */
export const sampleValues: Record<string, unknown> = {
  fp8e5m2: 1.5,
  fp8e4m3: -2.5,
  fp16: 0.333251953125,
  fp32: 3.25,
  fp64: Math.PI,
  int8: -7,
  int16: 30000,
  int32: -2_000_000_000,
  int64: '-9007199254740993',
  uint8: 200,
  uint16: 65535,
  uint32: 4_000_000_000,
  uint64: '18446744073709551615',
  string: 'héllo, wörld',
  bool: true,
  fp8e5m2_vector: [1, -2, 0.5],
  fp8e4m3_vector: [448, 0.25, -1],
  fp16_vector: [1.5, -0.5, 65504],
  fp32_vector: [0.1, 0.2, 0.3],
  fp64_vector: [1e-300, 2, -3],
  int8_vector: [-128, 0, 127],
  int16_vector: [-1, 2, -3],
  int32_vector: [1, -2, 3],
  int64_vector: ['-9223372036854775808', '0', '9223372036854775807'],
  uint8_vector: [0, 128, 255],
  uint16_vector: [1, 2, 3],
  uint32_vector: [4294967295, 0, 7],
  uint64_vector: ['18446744073709551615', '1', '2'],
  string_vector: ['a', '', 'ç'],
  bool_vector: [true, false, true],
};
