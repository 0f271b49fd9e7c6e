/** A gRPC status as the ops server's JSON APIs answer it: one table with the admin API's statuses. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { ErrorCode } from '../../../src/platform/errors.js';
import { grpcStatusOf } from '../../../src/platform/grpc/index.js';
import { httpErrorOfGrpc } from '../../../src/platform/grpc-gateway/index.js';
import { httpStatusOf } from '../../../src/platform/http/index.js';

test('every Lattice code answers over HTTP/JSON as the admin API answers it', () => {
  for (const [code, grpcCode] of Object.entries(grpcStatusOf) as [ErrorCode, status][]) {
    assert.deepEqual(httpErrorOfGrpc(grpcCode, 'why', 'a.b'), {
      status: httpStatusOf[code],
      body: { error: { code, message: 'why', field: 'a.b' } },
    });
  }
  assert.deepEqual(httpErrorOfGrpc(status.NOT_FOUND, 'unknown model'), {
    status: 404,
    body: { error: { code: 'NOT_FOUND', message: 'unknown model' } },
  });
});

test('the gRPC codes no Lattice error has keep their names', () => {
  assert.equal(httpErrorOfGrpc(status.UNIMPLEMENTED, 'x').status, 501);
  assert.equal(httpErrorOfGrpc(status.UNIMPLEMENTED, 'x').body.error.code, 'UNIMPLEMENTED');
  assert.equal(httpErrorOfGrpc(status.OUT_OF_RANGE, 'x').status, 400);
  assert.equal(httpErrorOfGrpc(status.UNKNOWN, 'x').status, 500);
  assert.equal(httpErrorOfGrpc(status.DATA_LOSS, 'x').body.error.code, 'DATA_LOSS');
});
