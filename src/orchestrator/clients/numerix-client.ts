import {
  type NumerixRequestProto,
  type NumerixResponseProto,
  NumerixService,
  type Score,
} from '../../gen/numerix/numerix.js';
import { invalidArgument, LatticeError } from '../../platform/errors.js';
import type { CallPolicy } from './call-policy.js';
import type { RemoteCompute, RemoteComputeOptions, RemoteComputeRequest } from './remote-compute.js';

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/**
 * RemoteCompute over `numerix.Numerix/Compute`. Rows go as byte rows (the id's bytes, then
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
    const width = request.dataType === 'FP32' ? 4 : 8;
    const columns = request.schema.length;
    if (columns < 1)
      throw invalidArgument('remote compute: the schema needs at least the id column', 'schema');
    request.rows.forEach((row, r) => {
      if (row.length !== columns)
        throw invalidArgument(
          `remote compute: row ${r} has ${row.length} values for ${columns} columns`,
          'rows',
        );
      for (let c = 1; c < columns; c++) {
        if (row[c]!.length !== width) {
          throw invalidArgument(
            `remote compute: row ${r} column ${request.schema[c]} has ${row[c]!.length} bytes, ${request.dataType} needs ${width}`,
            'rows',
          );
        }
      }
    });
    const message: NumerixRequestProto = {
      entityScoreData: {
        schema: [...request.schema],
        entityScores: request.rows.map((row) => ({ byteData: { values: row.map(asBuffer) } })),
        computeId: request.computeId,
        dataType: request.dataType === 'FP32' ? 'fp32' : 'fp64',
      },
    };
    return this.policy.unary(
      { service: 'numerix', target, method: 'Compute' },
      NumerixService.compute,
      message,
      options,
      (response) => readScores(response, request, `numerix ${target}: compute ${request.computeId}`),
    );
  }
}

function readScores(
  response: NumerixResponseProto,
  request: RemoteComputeRequest,
  where: string,
): Float64Array {
  if (response.error)
    throw new LatticeError('FAILED_PRECONDITION', `${where} failed: ${response.error.message}`);
  const data = response.computationScoreData;
  if (!data) throw new LatticeError('INTERNAL', `${where}: the response holds neither scores nor an error`);
  const rows = request.rows;
  if (data.computationScores.length !== rows.length) {
    throw new LatticeError(
      'INTERNAL',
      `${where}: ${data.computationScores.length} scores returned for ${rows.length} rows`,
    );
  }
  const scores = new Float64Array(rows.length);
  const returned = data.computationScores;
  for (let r = 0; r < returned.length; r++) scores[r] = readScore(returned[r]!, rows[r]![0]!, r, where);
  return scores;
}

/** One `[id, score]` row; its id must be the request row's. No allocation unless the row is bad. */
function readScore(score: Score, id: Uint8Array, r: number, where: string): number {
  if (score.byteData) {
    const [echoed, value] = score.byteData.values;
    if (!echoed || !value)
      throw badRow(where, r, `has ${score.byteData.values.length} values, expected [id, score]`);
    if (!echoed.equals(id)) throw badRow(where, r, 'is for another id: rows out of order');
    if (value.length === 4) return value.readFloatLE(0);
    if (value.length === 8) return value.readDoubleLE(0);
    throw badRow(where, r, `has a ${value.length}-byte score, expected 4 or 8`);
  }
  if (score.stringData) {
    const [echoed, value] = score.stringData.values;
    if (echoed === undefined || value === undefined)
      throw badRow(where, r, `has ${score.stringData.values.length} values, expected [id, score]`);
    if (echoed !== Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('utf8'))
      throw badRow(where, r, 'is for another id: rows out of order');
    const number = Number(value);
    if (value.trim() === '' || (Number.isNaN(number) && value.trim() !== 'NaN'))
      throw badRow(where, r, `has score "${value}", not a number`);
    return number;
  }
  throw badRow(where, r, 'is empty');
}

function badRow(where: string, r: number, why: string): LatticeError {
  return new LatticeError('INTERNAL', `${where}: score row ${r} ${why}`);
}
