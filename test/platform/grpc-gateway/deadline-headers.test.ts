/** The deadline headers of an HTTP/JSON call (X-Lattice-Deadline-Ms and grpc-timeout). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import { timeoutMsOf } from '../../../src/platform/grpc-gateway/index.js';

test('X-Lattice-Deadline-Ms and grpc-timeout give the call its timeout, the sooner of the two', () => {
  assert.equal(timeoutMsOf({}), undefined);
  assert.equal(timeoutMsOf({ 'x-lattice-deadline-ms': '250' }), 250);
  assert.equal(timeoutMsOf({ 'x-lattice-deadline-ms': '0' }), 0);
  assert.equal(timeoutMsOf({ 'grpc-timeout': '2S' }), 2000);
  assert.equal(timeoutMsOf({ 'grpc-timeout': '1M' }), 60_000);
  assert.equal(timeoutMsOf({ 'grpc-timeout': '1500u' }), 1.5);
  assert.equal(timeoutMsOf({ 'grpc-timeout': '99999999H' }), 2 ** 31 - 1);
  assert.equal(timeoutMsOf({ 'x-lattice-deadline-ms': '900', 'grpc-timeout': '300m' }), 300);
});

test('a malformed deadline header is INVALID_ARGUMENT at the header', () => {
  for (const [header, value, field] of [
    ['x-lattice-deadline-ms', 'soon', 'X-Lattice-Deadline-Ms'],
    ['x-lattice-deadline-ms', '-5', 'X-Lattice-Deadline-Ms'],
    ['x-lattice-deadline-ms', '1.5', 'X-Lattice-Deadline-Ms'],
    ['x-lattice-deadline-ms', '99999999999', 'X-Lattice-Deadline-Ms'],
    ['grpc-timeout', '5', 'grpc-timeout'],
    ['grpc-timeout', '123456789S', 'grpc-timeout'],
    ['grpc-timeout', '5s', 'grpc-timeout'],
  ] as const) {
    assert.throws(
      () => timeoutMsOf({ [header]: value }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === field,
      `${header}: ${value}`,
    );
  }
});
