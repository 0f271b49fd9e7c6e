import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NumerixRequestProto, NumerixResponseProto } from '../../../src/gen/numerix/numerix.js';
import type { RemoteComputeRequest } from '../../../src/orchestrator/clients/index.js';
import { encodeComputeRequest, readComputeScores } from '../../../src/orchestrator/wire/numerix-compute.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { seededRandom } from '../../../src/platform/random.js';

const random = seededRandom(7);
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;

function randomRequest(): RemoteComputeRequest {
  const dataType = pick(['FP32', 'FP64'] as const);
  // Up to 300 rows and long names: nested lengths past one varint byte.
  const rows = pick([0, 1, 2, 17, 300]);
  const variables = 1 + Math.floor(random() * 4);
  const ids = Array.from({ length: rows }, (_, r) => pick(['', `c${r}`, `é${r}€`, 'x'.repeat(200 + r)]));
  const columns = Array.from({ length: variables }, () => {
    const values = Array.from({ length: rows }, () => (random() - 0.5) * 1e6);
    return dataType === 'FP32' ? Float32Array.from(values) : Float64Array.from(values);
  });
  return {
    computeId: pick(['', 'blend', 'b'.repeat(150)]),
    schema: ['id', ...Array.from({ length: variables }, (_, v) => `variable_${v}`.repeat(1 + (v % 3) * 10))],
    ids,
    columns,
    dataType,
  };
}

/** The same request through the generated encoder: byte rows of [id, value…]. */
function generated(request: RemoteComputeRequest): Buffer {
  const width = request.dataType === 'FP32' ? 4 : 8;
  return Buffer.from(
    NumerixRequestProto.encode({
      entityScoreData: {
        schema: [...request.schema],
        entityScores: request.ids.map((id, r) => ({
          byteData: {
            values: [
              Buffer.from(id),
              ...request.columns.map((c) => Buffer.from(c.buffer, c.byteOffset + r * width, width)),
            ],
          },
        })),
        computeId: request.computeId,
        dataType: request.dataType === 'FP32' ? 'fp32' : 'fp64',
      },
    }).finish(),
  );
}

const sent = (ids: string[]) =>
  encodeComputeRequest({
    computeId: 'c',
    schema: ['id', 'x'],
    ids,
    columns: [new Float64Array(ids.length)],
    dataType: 'FP64',
  });

const f32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};
const f64 = (x: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(x);
  return b;
};
const respond = (message: NumerixResponseProto) => Buffer.from(NumerixResponseProto.encode(message).finish());
const scores = (...rows: Buffer[][]): NumerixResponseProto => ({
  computationScoreData: {
    schema: ['id', 'score'],
    computationScores: rows.map((values) => ({ byteData: { values } })),
  },
});

function fails(run: () => unknown, code: string, pattern: RegExp): void {
  assert.throws(run, (err: unknown) => {
    assert.ok(isLatticeError(err), `not a LatticeError: ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('numerix wire codec', () => {
  test('the request encoder writes what the generated encoder writes, over random requests', () => {
    for (let i = 0; i < 300; i++) {
      const request = randomRequest();
      assert.deepEqual(encodeComputeRequest(request).bytes, generated(request), `request ${i}`);
    }
  });

  test('scores are read as 4- or 8-byte floats or decimal strings, for the ids sent, in order', () => {
    const request = sent(['a', 'é€']);
    const bytes = respond(
      scores([Buffer.from('a'), f32(1.5)], [Buffer.from('é€'), f64(-2.25), Buffer.from('extra')]),
    );
    assert.deepEqual([...readComputeScores(bytes, request, 'w')], [1.5, -2.25]);
    const text = respond({
      computationScoreData: {
        schema: [],
        computationScores: [
          { stringData: { values: ['a', ' 3e2 '] } },
          { stringData: { values: ['é€', 'NaN'] } },
        ],
      },
    });
    assert.deepEqual([...readComputeScores(text, request, 'w')], [300, Number.NaN]);
  });

  test('unknown fields are skipped at every level, and the last arm of a oneof wins', () => {
    const request = sent(['a']);
    const inner = respond(scores([Buffer.from('a'), f64(4)]));
    // Unknown fields of each wire type (varint 9, fixed64 10, length-delimited 11, fixed32 12) around it.
    const unknown = Buffer.from([
      0x48, 0x96, 0x01, 0x51, 1, 2, 3, 4, 5, 6, 7, 8, 0x5a, 2, 0xaa, 0xbb, 0x65, 1, 2, 3, 4,
    ]);
    assert.deepEqual([...readComputeScores(Buffer.concat([unknown, inner, unknown]), request, 'w')], [4]);
    // An error arm followed by a scores arm: the scores win; the other way round, the error.
    const error = respond({ error: { message: 'no such expression' } });
    assert.deepEqual([...readComputeScores(Buffer.concat([error, inner]), request, 'w')], [4]);
    fails(
      () => readComputeScores(Buffer.concat([inner, error]), request, 'w'),
      'FAILED_PRECONDITION',
      /^w failed: no such expression$/,
    );
  });

  test('every way a response can be wrong is INTERNAL naming where, never a misplaced score', () => {
    const request = sent(['a', 'b']);
    const ok = respond(scores([Buffer.from('a'), f64(1)], [Buffer.from('b'), f64(2)]));
    fails(
      () => readComputeScores(Buffer.alloc(0), request, 'w'),
      'INTERNAL',
      /^w: the response holds neither scores nor an error$/,
    );
    fails(
      () => readComputeScores(respond(scores([Buffer.from('a'), f64(1)])), request, 'w'),
      'INTERNAL',
      /1 scores returned for 2 rows/,
    );
    fails(
      () =>
        readComputeScores(
          respond(scores([Buffer.from('b'), f64(1)], [Buffer.from('a'), f64(2)])),
          request,
          'w',
        ),
      'INTERNAL',
      /score row 0 is for another id: rows out of order/,
    );
    fails(
      () => readComputeScores(respond(scores([Buffer.from('a'), f64(1)], [Buffer.from('b')])), request, 'w'),
      'INTERNAL',
      /score row 1 has 1 values, expected \[id, score\]/,
    );
    fails(
      () =>
        readComputeScores(
          respond(scores([Buffer.from('a'), Buffer.alloc(2)], [Buffer.from('b'), f64(1)])),
          request,
          'w',
        ),
      'INTERNAL',
      /score row 0 has a 2-byte score, expected 4 or 8/,
    );
    const empty = respond({ computationScoreData: { schema: [], computationScores: [{}, {}] } });
    fails(() => readComputeScores(empty, request, 'w'), 'INTERNAL', /score row 0 is empty/);
    const words = respond({
      computationScoreData: { schema: [], computationScores: [{ stringData: { values: ['a', 'x1'] } }, {}] },
    });
    fails(
      () => readComputeScores(words, request, 'w'),
      'INTERNAL',
      /score row 0 has score "x1", not a number/,
    );
    // Every truncation of a valid response is refused, never read past its end.
    for (let cut = 1; cut < ok.length; cut++) {
      assert.throws(
        () => readComputeScores(ok.subarray(0, cut), request, 'w'),
        (err: unknown) => isLatticeError(err, 'INTERNAL'),
      );
    }
    // A group wire type (never written by proto3) is malformed.
    fails(
      () => readComputeScores(Buffer.from([0x0b]), request, 'w'),
      'INTERNAL',
      /w: malformed response: field 1 has wire type 3/,
    );
  });
});
