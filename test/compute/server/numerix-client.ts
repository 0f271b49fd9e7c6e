/** Helpers for talking to a compute server the way a numerix client does: the generated NumerixClient over loopback. */
import assert from 'node:assert/strict';
import { credentials } from '@grpc/grpc-js';
import {
  NumerixClient,
  type NumerixRequestProto,
  type NumerixResponseProto,
  type Score,
} from '../../../src/gen/numerix/numerix.js';

export function numerixClient(port: number): NumerixClient {
  return new NumerixClient(`127.0.0.1:${port}`, credentials.createInsecure());
}

export function compute(client: NumerixClient, request: NumerixRequestProto): Promise<NumerixResponseProto> {
  return new Promise((resolve, reject) =>
    client.compute(request, (err, response) => (err ? reject(err) : resolve(response))),
  );
}

export interface TableOptions {
  computeId: string;
  schema: string[];
  dataType?: string;
}

/** A request whose rows are text: `[id, value, …]`. */
export function stringRequest(options: TableOptions, rows: string[][]): NumerixRequestProto {
  return {
    entityScoreData: {
      computeId: options.computeId,
      schema: options.schema,
      dataType: options.dataType,
      entityScores: rows.map((values) => ({ stringData: { values } })),
    },
  };
}

/** Little-endian bytes of `value` in fp32 or fp64. */
export function le(value: number, precision: 'fp32' | 'fp64'): Buffer {
  const bytes = Buffer.alloc(precision === 'fp32' ? 4 : 8);
  if (precision === 'fp32') bytes.writeFloatLE(value, 0);
  else bytes.writeDoubleLE(value, 0);
  return bytes;
}

/** A request whose rows are bytes: the id as given, numbers as LE values of `precision`. */
export function bytesRequest(
  options: TableOptions,
  rows: [Buffer, ...(number | Buffer)[]][],
  precision: 'fp32' | 'fp64',
): NumerixRequestProto {
  return {
    entityScoreData: {
      computeId: options.computeId,
      schema: options.schema,
      dataType: options.dataType,
      entityScores: rows.map(([id, ...values]) => ({
        byteData: { values: [id, ...values.map((v) => (typeof v === 'number' ? le(v, precision) : v))] },
      })),
    },
  };
}

/** The `[id, score]` text rows of a successful response; fails the test on an error response. */
export function stringScores(response: NumerixResponseProto): string[][] {
  assert.equal(response.error, undefined, `unexpected error: ${response.error?.message}`);
  const data = response.computationScoreData;
  assert.ok(data, 'no computation_score_data');
  return data.computationScores.map((score: Score) => {
    assert.ok(score.stringData, 'expected string_data rows');
    return score.stringData.values;
  });
}

/** The error message of a failed computation; fails the test when it succeeded. */
export function errorMessage(response: NumerixResponseProto): string {
  assert.equal(response.computationScoreData, undefined, 'expected the error arm, got scores');
  assert.ok(response.error, 'expected the error arm');
  return response.error.message;
}
