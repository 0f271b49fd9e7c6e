import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ComputeServer, startComputeServer } from '../../../src/compute/server/index.js';
import type { NumerixClient, NumerixRequestProto } from '../../../src/gen/numerix/numerix.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { seededRandom } from '../../../src/platform/random.js';
import {
  bytesRequest,
  compute,
  errorMessage,
  le,
  numerixClient,
  stringRequest,
  stringScores,
} from './numerix-client.js';

const f32 = Math.fround;

describe('numerix.Numerix/Compute over gRPC', () => {
  const store = new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-compute-')) });
  const metrics = new Metrics();
  let server: ComputeServer;
  let client: NumerixClient;

  before(async () => {
    await store.put('compute/sum', { expression: 'a b +' });
    await store.put('compute/ratio', { expression: 'a b /' });
    await store.put('compute/logged', { expression: 'a log' });
    await store.put('compute/both', { expression: 'a b &' });
    await store.put('compute/blend', { expression: 'a 0.3 * b 0.7 * +' });
    await store.put('compute/sum32', { expression: 'a b +', data_type: 'fp32' });
    await store.put('compute/constant', { expression: '2 3 *' });
    await store.put('compute/scale', { expression: 'a 1 *' });
    await store.put('compute/grow', { expression: 'a exp' });
    await store.put('compute/team/blend', { expression: 'a 2 *' });
    server = await startComputeServer({
      store,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('test', { level: 'silent' }),
      metrics,
      shutdownGraceMs: 1000,
    });
    client = numerixClient(server.port);
  });

  after(async () => {
    client.close();
    await server.stop();
    await store.close();
  });

  const sum = { computeId: 'sum', schema: ['id', 'a', 'b'] };

  describe('string format', () => {
    test('the numerix example: "a b +" over rows (1,2),(3,4) gives 3 and 7, with the id column echoed', async () => {
      const response = await compute(
        client,
        stringRequest(sum, [
          ['x1', '1', '2'],
          ['x2', '3', '4'],
        ]),
      );
      assert.deepEqual(response.computationScoreData?.schema, ['id', 'score']);
      assert.deepEqual(stringScores(response), [
        ['x1', '3'],
        ['x2', '7'],
      ]);
    });

    test('schema[0] and every id are echoed as given, never parsed', async () => {
      const ids = ['user:42|item:7', '', 'not a number', 'ünïcødé', '1e999'];
      const response = await compute(
        client,
        stringRequest(
          { computeId: 'sum', schema: ['catalog_id', 'a', 'b'] },
          ids.map((id, i) => [id, String(i), '1']),
        ),
      );
      assert.deepEqual(response.computationScoreData?.schema, ['catalog_id', 'score']);
      assert.deepEqual(
        stringScores(response),
        ids.map((id, i) => [id, String(i + 1)]),
      );
    });

    test('columns bind to variables by name, in any order, and unused columns are allowed', async () => {
      const response = await compute(
        client,
        stringRequest({ computeId: 'ratio', schema: ['id', 'unused', 'b', 'a'] }, [
          ['r0', '99', '4', '1'],
          ['r1', '-5', '-2', '5'],
        ]),
      );
      assert.deepEqual(stringScores(response), [
        ['r0', '0.25'],
        ['r1', '-2.5'],
      ]);
    });

    test('an expression without variables gives its constant on every row (schema may be just the id)', async () => {
      const response = await compute(
        client,
        stringRequest({ computeId: 'constant', schema: ['id'] }, [['p'], ['q']]),
      );
      assert.deepEqual(stringScores(response), [
        ['p', '6'],
        ['q', '6'],
      ]);
    });

    test('numbers in every decimal form, negatives, and inf/nan as numerix accepts them', async () => {
      const response = await compute(
        client,
        stringRequest(sum, [
          ['a', '-1.5', '+2'],
          ['b', '.5', '5.'],
          ['c', '1e3', '2E-1'],
          ['d', 'inf', '1'],
          ['e', '-Infinity', '0'],
          ['f', 'NaN', '1'],
        ]),
      );
      assert.deepEqual(stringScores(response), [
        ['a', '0.5'],
        ['b', '5.5'],
        ['c', '1000.2'],
        ['d', 'Infinity'],
        ['e', '-Infinity'],
        ['f', 'NaN'],
      ]);
    });

    test('fp64 by default and for fp64/f64; fp32 for fp32/f32 (any case), computing in that precision', async () => {
      const rows = [['x', '0.1', '0.2']];
      const text = async (dataType: string | undefined) =>
        stringScores(await compute(client, stringRequest({ ...sum, dataType }, rows)))[0]![1];
      assert.equal(await text(undefined), '0.30000000000000004');
      assert.equal(await text(''), '0.30000000000000004');
      assert.equal(await text('fp64'), '0.30000000000000004');
      assert.equal(await text('F64'), '0.30000000000000004');
      assert.equal(await text('fp32'), '0.3');
      assert.equal(await text('F32'), '0.3');
      // 16777216 + 1 is not representable in fp32: the fp32 sum rounds back to 16777216.
      const big = [['x', '16777216', '1']];
      const bigText = async (dataType: string) =>
        stringScores(await compute(client, stringRequest({ ...sum, dataType }, big)))[0]![1];
      assert.equal(await bigText('fp32'), '16777216');
      assert.equal(await bigText('fp64'), '16777217');
    });

    test('the document data_type is the default; the request data_type wins over it', async () => {
      const rows = [['x', '0.1', '0.2']];
      const text = async (dataType: string | undefined) =>
        stringScores(
          await compute(
            client,
            stringRequest({ computeId: 'sum32', schema: ['id', 'a', 'b'], dataType }, rows),
          ),
        )[0]![1];
      assert.equal(await text(undefined), '0.3');
      assert.equal(await text('fp64'), '0.30000000000000004');
    });

    test('scores are the shortest text that reads back to the same value (seeded, fp32 and fp64)', async () => {
      const random = seededRandom(7);
      const values = Array.from({ length: 500 }, (_, i) => {
        const magnitude = 10 ** Math.floor(random() * 40 - 20);
        return (random() - 0.5) * magnitude * (i % 7 === 0 ? 1e10 : 1);
      });
      for (const precision of ['fp32', 'fp64'] as const) {
        const response = await compute(
          client,
          stringRequest(
            { computeId: 'scale', schema: ['id', 'a'], dataType: precision },
            values.map((v, i) => [String(i), String(v)]),
          ),
        );
        stringScores(response).forEach(([id, text], i) => {
          assert.equal(id, String(i));
          const expected = precision === 'fp32' ? f32(values[i]!) : values[i]!;
          const read = precision === 'fp32' ? f32(Number(text)) : Number(text);
          assert.equal(read, expected, `${precision} row ${i}: ${text}`);
          const digits = text!
            .replace(/^-/, '')
            .replace(/e.*$/, '')
            .replace('.', '')
            .replace(/^0+/, '')
            .replace(/0+$/, '');
          // No shorter text would do: one digit fewer no longer reads back.
          if (digits.length > 1) {
            const shorter = Number(expected.toPrecision(digits.length - 1));
            assert.notEqual(precision === 'fp32' ? f32(shorter) : shorter, expected, `${precision} row ${i}`);
          }
        });
      }
    });

    test('an overflowing result is Infinity, and negative zero stays negative', async () => {
      const response = await compute(
        client,
        stringRequest({ computeId: 'grow', schema: ['id', 'a'] }, [
          ['big', '1000'],
          ['zero', '-1e999999'],
        ]),
      );
      assert.deepEqual(stringScores(response), [
        ['big', 'Infinity'],
        ['zero', '0'],
      ]);
      const negativeZero = await compute(
        client,
        stringRequest({ computeId: 'scale', schema: ['id', 'a'] }, [['z', '-0']]),
      );
      assert.deepEqual(stringScores(negativeZero), [['z', '-0']]);
    });

    test('a compute_id with slashes names the nested key compute/<compute_id>', async () => {
      const response = await compute(
        client,
        stringRequest({ computeId: 'team/blend', schema: ['id', 'a'] }, [['t', '21']]),
      );
      assert.deepEqual(stringScores(response), [['t', '42']]);
    });
  });

  describe('byte format', () => {
    const decodeRows = (request: NumerixRequestProto, response: Awaited<ReturnType<typeof compute>>) => {
      assert.equal(response.error, undefined, response.error?.message);
      const rows = response.computationScoreData!.computationScores;
      assert.equal(rows.length, request.entityScoreData!.entityScores.length);
      return rows.map((row) => {
        assert.ok(row.byteData, 'expected byte_data rows');
        assert.equal(row.byteData.values.length, 2);
        return row.byteData.values as [Buffer, Buffer];
      });
    };

    test('fp64: 8-byte little-endian values in and out; the id bytes are echoed unchanged', async () => {
      const ids = [Buffer.from([0, 255, 1]), Buffer.from('item-7'), Buffer.alloc(0)];
      const request = bytesRequest(
        sum,
        [
          [ids[0]!, 1, 2],
          [ids[1]!, 3, 4],
          [ids[2]!, 0.1, 0.2],
        ],
        'fp64',
      );
      const response = await compute(client, request);
      assert.deepEqual(response.computationScoreData?.schema, ['id', 'score']);
      const rows = decodeRows(request, response);
      assert.deepEqual(
        rows.map(([id]) => id),
        ids,
      );
      for (const [, score] of rows) assert.equal(score.length, 8);
      assert.deepEqual(
        rows.map(([, score]) => score.readDoubleLE(0)),
        [3, 7, 0.1 + 0.2],
      );
    });

    test('fp32: 4-byte little-endian values in and out, computed in fp32', async () => {
      for (const dataType of ['fp32', 'f32']) {
        const request = bytesRequest(
          { ...sum, dataType },
          [
            [Buffer.from('a'), 1, 2],
            [Buffer.from('b'), 0.1, 0.2],
            [Buffer.from('c'), 16777216, 1],
          ],
          'fp32',
        );
        const rows = decodeRows(request, await compute(client, request));
        for (const [, score] of rows) assert.equal(score.length, 4);
        assert.deepEqual(
          rows.map(([, score]) => score.readFloatLE(0)),
          [3, f32(f32(0.1) + f32(0.2)), 16777216],
        );
      }
    });

    test('the document data_type decides the byte width when the request names none', async () => {
      const request = bytesRequest(
        { computeId: 'sum32', schema: ['id', 'a', 'b'] },
        [[Buffer.from('x'), 1.5, 2.25]],
        'fp32',
      );
      const rows = decodeRows(request, await compute(client, request));
      assert.equal(rows[0]![1].length, 4);
      assert.equal(rows[0]![1].readFloatLE(0), 3.75);
    });

    test('a large batch is scored in one vectorised pass, row order kept', async () => {
      const random = seededRandom(11);
      const n = 20_000;
      const a = Array.from({ length: n }, () => random() * 10);
      const b = Array.from({ length: n }, () => random() * 10);
      const request = bytesRequest(
        { computeId: 'blend', schema: ['id', 'a', 'b'], dataType: 'fp32' },
        a.map((x, i) => {
          const id = Buffer.alloc(4);
          id.writeUInt32LE(i, 0);
          return [id, x, b[i]!];
        }),
        'fp32',
      );
      const rows = decodeRows(request, await compute(client, request));
      rows.forEach(([id, score], i) => {
        assert.equal(id.readUInt32LE(0), i);
        const expected = f32(f32(f32(a[i]!) * f32(0.3)) + f32(f32(b[i]!) * f32(0.7)));
        assert.equal(score.readFloatLE(0), expected, `row ${i}`);
      });
    });
  });

  describe('request validation: an OK response whose error arm says what is wrong', () => {
    const invalid = async (request: NumerixRequestProto, message: RegExp) => {
      const text = errorMessage(await compute(client, request));
      assert.match(text, /^Request validation failed: /);
      assert.match(text, message);
    };

    test('missing entity_score_data', () => invalid({}, /Missing entity_score_data/));

    test('empty compute_id', async () => {
      const text = errorMessage(
        await compute(client, stringRequest({ computeId: '', schema: ['id', 'a'] }, [['x', '1']])),
      );
      assert.equal(text, 'Request validation failed: Empty compute_id');
    });

    test('empty schema', () =>
      invalid(stringRequest({ computeId: 'sum', schema: [] }, [['x']]), /Empty schema/));

    test('no rows', () => invalid(stringRequest(sum, []), /No rows \(entity_scores is empty\)/));

    test('a row with fewer or more values than the schema has columns', async () => {
      await invalid(
        stringRequest(sum, [
          ['x', '1', '2'],
          ['y', '1'],
        ]),
        /row 1 has 2 values but the schema has 3 columns \(id, a, b\)/,
      );
      await invalid(stringRequest(sum, [['x', '1', '2', '3']]), /row 0 has 4 values but the schema has 3/);
      await invalid(
        bytesRequest(sum, [[Buffer.from('x'), 1]], 'fp64'),
        /row 0 has 2 values but the schema has 3/,
      );
    });

    test('a row with neither string_data nor byte_data', () =>
      invalid(
        { entityScoreData: { computeId: 'sum', schema: ['id', 'a', 'b'], entityScores: [{}] } },
        /row 0 has neither string_data nor byte_data/,
      ));

    test('rows mixing string_data and byte_data', () =>
      invalid(
        {
          entityScoreData: {
            computeId: 'sum',
            schema: ['id', 'a', 'b'],
            entityScores: [
              { stringData: { values: ['x', '1', '2'] } },
              { byteData: { values: [Buffer.from('y'), le(1, 'fp64'), le(2, 'fp64')] } },
            ],
          },
        },
        /row 1 is byte_data but row 0 is string_data; every row must use the same format/,
      ));

    test('text that is not a number, named by row and column', async () => {
      for (const bad of ['abc', '', ' 1', '1 ', '0x10', '1,5', '1e', '--1', 'Infinityy']) {
        await invalid(
          stringRequest(sum, [
            ['x', '1', '2'],
            ['y', '3', bad],
          ]),
          new RegExp(
            `row 1, column \`b\`: ${JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a number`,
          ),
        );
      }
    });

    test('byte values that are not exactly 4 (fp32) or 8 (fp64) bytes', async () => {
      await invalid(
        bytesRequest(sum, [[Buffer.from('x'), 1, Buffer.from([1, 2, 3])]], 'fp64'),
        /row 0, column `b`: 3 bytes, but fp64 values are 8 bytes \(little-endian\)/,
      );
      await invalid(
        bytesRequest({ ...sum, dataType: 'fp32' }, [[Buffer.from('x'), 1, 2]], 'fp64'),
        /row 0, column `a`: 8 bytes, but fp32 values are 4 bytes/,
      );
      await invalid(
        bytesRequest(sum, [[Buffer.from('x'), 1, 2]], 'fp32'),
        /row 0, column `a`: 4 bytes, but fp64 values are 8 bytes/,
      );
    });

    test('an unknown data_type', () =>
      invalid(
        stringRequest({ ...sum, dataType: 'fp16' }, [['x', '1', '2']]),
        /data_type: unknown precision "fp16"; expected fp32, f32, fp64 or f64/,
      ));

    test('a schema naming a column twice', () =>
      invalid(
        stringRequest({ computeId: 'sum', schema: ['id', 'a', 'b', 'a'] }, [['x', '1', '2', '3']]),
        /schema column `a` appears twice \(schema\[1\] and schema\[3\]\)/,
      ));

    test('an expression variable missing from the schema (the id column does not count)', async () => {
      await invalid(
        stringRequest({ computeId: 'sum', schema: ['id', 'a', 'c'] }, [['x', '1', '2']]),
        /the expression of compute_id sum \(`a b \+`\) uses `b`, which is not a schema column \(value columns: a, c\)/,
      );
      await invalid(
        stringRequest({ computeId: 'scale', schema: ['a'] }, [['1']]),
        /uses `a`, which is not a schema column \(value columns: none\)/,
      );
    });
  });

  test('an unknown compute_id: "No expression configured for compute_id: <id>"', async () => {
    const response = await compute(client, stringRequest({ ...sum, computeId: 'nope' }, [['x', '1', '2']]));
    assert.equal(errorMessage(response), 'No expression configured for compute_id: nope');
  });

  describe('evaluation errors come back in the error arm with the engine message naming the row', () => {
    test('division by zero', async () => {
      const response = await compute(
        client,
        stringRequest({ computeId: 'ratio', schema: ['id', 'a', 'b'] }, [
          ['x', '1', '2'],
          ['y', '1', '0'],
        ]),
      );
      assert.match(errorMessage(response), /^division by zero at row 1 in `a b \/` \(token 3\)$/);
    });

    test('log of a non-positive value', async () => {
      const response = await compute(
        client,
        bytesRequest({ computeId: 'logged', schema: ['id', 'a'] }, [[Buffer.from('x'), -2]], 'fp64'),
      );
      assert.match(errorMessage(response), /^log of non-positive value -2 at row 0 in `a log`/);
    });

    test('& on a value that is not 0 or 1', async () => {
      const response = await compute(
        client,
        stringRequest({ computeId: 'both', schema: ['id', 'a', 'b'] }, [['x', '1', '2']]),
      );
      assert.match(errorMessage(response), /operator & needs 0\/1 operands, got 2 at row 0/);
    });
  });

  test('outcomes are counted per configured compute_id; unknown ids share one empty label', async () => {
    const body = (await metrics.scrape()).body;
    assert.match(body, /compute_requests_total\{compute_id="sum",outcome="ok"\} \d+/);
    assert.match(body, /compute_requests_total\{compute_id="",outcome="unknown_compute_id"\} 1/);
    assert.match(body, /compute_requests_total\{compute_id="ratio",outcome="evaluation_error"\} 1/);
    assert.match(body, /compute_requests_total\{compute_id="sum",outcome="invalid_request"\} \d+/);
    assert.match(body, /compute_expressions 10/);
  });
});
