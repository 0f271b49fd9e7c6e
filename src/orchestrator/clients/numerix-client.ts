import { NumerixService } from '../../gen/numerix/numerix.js';
import { invalidArgument } from '../../platform/errors.js';
import { encodeComputeRequest, readComputeScores } from '../wire/numerix-compute.js';
import { type CallPolicy, passThrough } from './call-policy.js';
import type { RemoteCompute, RemoteComputeOptions, RemoteComputeRequest } from './remote-compute.js';

/** `numerix.Numerix/Compute` with the request and the response as bytes: wire/numerix-compute.ts does both. */
const compute = {
  ...NumerixService.compute,
  requestSerialize: passThrough,
  requestDeserialize: passThrough,
  responseSerialize: passThrough,
  responseDeserialize: passThrough,
};

/**
 * RemoteCompute over `numerix.Numerix/Compute`. Rows go as byte rows (the id's UTF-8 bytes, then
 * little-endian values of the request's precision); the answer is one `[id, score]` row per input
 * row, in order, which the client checks by the echoed ids. A computation error comes back as an OK
 * response with its `error` arm set: it becomes a FAILED_PRECONDITION carrying the server's message
 * (the endpoint is healthy, so it never counts towards opening its circuit).
 */
export class NumerixClient implements RemoteCompute {
  constructor(private readonly policy: CallPolicy) {}

  async compute(
    target: string,
    request: RemoteComputeRequest,
    options: RemoteComputeOptions,
  ): Promise<Float64Array> {
    const { schema, ids, columns, dataType } = request;
    if (schema.length < 1)
      throw invalidArgument('remote compute: the schema needs at least the id column', 'schema');
    if (columns.length !== schema.length - 1) {
      throw invalidArgument(
        `remote compute: ${columns.length} value columns for ${schema.length - 1} variables in the schema`,
        'columns',
      );
    }
    columns.forEach((column, c) => {
      const name = schema[c + 1];
      if (column.length !== ids.length)
        throw invalidArgument(
          `remote compute: column ${name} has ${column.length} values for ${ids.length} ids`,
          'columns',
        );
      if ((dataType === 'FP32') !== column instanceof Float32Array)
        throw invalidArgument(
          `remote compute: column ${name} holds ${column instanceof Float32Array ? 'FP32' : 'FP64'} values, the request is ${dataType}`,
          'columns',
        );
    });
    const sent = encodeComputeRequest(request);
    const where = `numerix ${target}: compute ${request.computeId}`;
    return this.policy.unary(
      { service: 'numerix', target, method: 'Compute' },
      compute,
      sent.bytes,
      options,
      (response) => readComputeScores(response, sent, where),
    );
  }
}
