/**
 * The columnar decoding of a PredictRequest's targets, pairs and slates (wire/request-columns.ts)
 * replaces the generated ts-proto decoding of those rows: for every message here, seeded random and
 * hand-made edge cases at the byte level, it must yield exactly what the generated decoder yields,
 * field by field (ids, every value's bytes, pair indices, slate indices, the rest of the message),
 * and throw wherever the generated decoder throws.
 *
 * The reference is the generated decoding it replaces: `Target.decode` / `TargetPair.decode` /
 * `TargetSlate.decode` of each row's bytes inside the sliced decoder. For well-formed messages that
 * is also what one `PredictRequest.decode` of the whole message gives (checked too). They differ
 * only for invalid protobuf: where a row holds a tag 0 or a stray end-group tag, the generated decoder
 * of the whole message ends the row there and reads the rest of the row as top-level fields, while
 * row-by-row decoding (before and after this change) ends the row at its length; where a row's last
 * field runs past the row's length, the whole-message decoder reads on into the next field, while
 * row-by-row decoding fails.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PredictRequest, Target, TargetPair, TargetSlate } from '../../../src/gen/orchestrator/v1/predict.js';
import { predictRows } from '../../../src/orchestrator/engine/request-rows.js';
import { decodePredictColumns } from '../../../src/orchestrator/wire/request-decoding.js';
import { decodeInSlices } from '../../../src/platform/protobuf/sliced-decode.js';
import { key, len, seededRandom, utf8, varint, vint } from '../../support/raw-protobuf.js';

// --- a protobuf writer that can write anything, unknown fields and wrong wire types included ------

const { rand, int, pick, maybe, shuffle, reseed } = seededRandom(1);
const bytes = (n: number) => Array.from({ length: n }, () => int(256));

/** An int32 as clients send it: negative ones as 10-byte varints, sometimes an out-of-range varint. */
function anInt32(): bigint | number {
  return pick<bigint | number>([
    0,
    1,
    int(100),
    int(2 ** 31),
    -1,
    -(2 ** 31),
    2 ** 31 - 1,
    2 ** 32 + 5,
    2n ** 63n + 7n,
    -int(1000),
  ]);
}

/** Field numbers no row (Target, TargetPair, TargetSlate) knows. */
const UNKNOWN_IN_ROWS = [4, 5, 15, 16, 2047, 536870911];
/** Field numbers PredictRequest does not know (4 and 5 are its target schema and targets). */
const UNKNOWN_IN_REQUEST = [11, 15, 16, 2047, 536870911];

/** A field unknown where it is written: every wire type, groups included. */
function unknownField(fields = UNKNOWN_IN_ROWS): number[] {
  const field = pick(fields);
  switch (int(5)) {
    case 0:
      return vint(field, anInt32());
    case 1:
      return [...key(field, 1), ...bytes(8)];
    case 2:
      return [...key(field, 5), ...bytes(4)];
    case 3:
      return len(field, bytes(int(12)));
    default:
      return [...key(field, 3), ...vint(1, 7), ...len(2, bytes(3)), ...key(field, 4)];
  }
}

/** A known field with the wrong wire type (the generated decoder skips it as unknown). */
function wrongWireType(field: number, rightType: number): number[] {
  const type = pick([0, 1, 2, 5].filter((t) => t !== rightType));
  if (type === 0) return vint(field, int(1000));
  if (type === 1) return [...key(field, 1), ...bytes(8)];
  if (type === 5) return [...key(field, 5), ...bytes(4)];
  return len(field, bytes(int(6)));
}

function target(edgy: boolean): number[] {
  const parts: number[][] = [];
  const values = int(4);
  if (!edgy || rand() < 0.8)
    parts.push(len(1, utf8(pick(['', 't', `t${int(1e6)}`, 'ünï😀', 'x'.repeat(40)]))));
  for (let v = 0; v < values; v++) parts.push(len(2, bytes(pick([0, 1, 4, 8, 33]))));
  if (edgy) {
    parts.push(maybe(0.3, unknownField));
    parts.push(maybe(0.2, () => wrongWireType(1, 2)));
    parts.push(maybe(0.2, () => wrongWireType(2, 2)));
    parts.push(maybe(0.2, () => len(1, utf8(`again${int(9)}`)))); // the last id wins
    // Shuffle: fields in any order.
    shuffle(parts);
  }
  return parts.flat();
}

function pair(edgy: boolean): number[] {
  const parts: number[][] = [vint(1, anInt32()), vint(2, anInt32())];
  for (let v = int(3); v > 0; v--) parts.push(len(3, bytes(pick([0, 4, 8]))));
  if (edgy) {
    parts.push(maybe(0.3, unknownField));
    parts.push(maybe(0.2, () => wrongWireType(1, 0)));
    parts.push(maybe(0.2, () => wrongWireType(3, 2)));
    parts.push(maybe(0.2, () => vint(2, anInt32()))); // the last index wins
    if (rand() < 0.2) parts.splice(0, 1);
    shuffle(parts);
  }
  return parts.flat();
}

function slate(edgy: boolean): number[] {
  const parts: number[][] = [];
  const indices = Array.from({ length: int(6) }, anInt32);
  if (rand() < 0.5)
    parts.push(
      len(
        1,
        indices.flatMap((i) => varint(i)),
      ),
    ); // packed
  else for (const i of indices) parts.push(vint(1, i)); // unpacked
  for (let v = int(3); v > 0; v--) parts.push(len(2, bytes(pick([0, 4]))));
  if (edgy) {
    parts.push(maybe(0.3, unknownField));
    parts.push(
      maybe(0.3, () =>
        len(
          1,
          [anInt32(), anInt32()].flatMap((i) => varint(i)),
        ),
      ),
    ); // packed and unpacked mixed
    parts.push(maybe(0.2, () => wrongWireType(2, 2)));
    shuffle(parts);
  }
  return parts.flat();
}

/** A whole request: rows of all three kinds interleaved with the other fields, as a client may send them. */
function request(targets: number, groups: number, edgy: boolean): Uint8Array {
  const fields: number[][] = [
    len(1, utf8('model')),
    len(2, utf8(`track${int(100)}`)),
    len(3, [...len(1, utf8('ctx')), ...vint(2, 4), ...len(4, bytes(4))]),
    len(4, [...len(1, utf8('price')), ...vint(2, 4)]),
    vint(10, 1),
  ];
  for (let i = 0; i < targets; i++) fields.push(len(5, target(edgy)));
  for (let i = 0; i < groups; i++) fields.push(len(7, pair(edgy)));
  for (let i = 0; i < groups; i++) fields.push(len(9, slate(edgy)));
  if (edgy) {
    fields.push(maybe(0.5, () => unknownField(UNKNOWN_IN_REQUEST)));
    shuffle(fields);
  }
  return Uint8Array.from(fields.flat());
}

// --- comparison -------------------------------------------------------------------------------

const live = { signal: new AbortController().signal, deadline: Number.POSITIVE_INFINITY };

/** The generated decoding the columns replace: each row decoded by its generated decoder. */
function generatedRowByRow(message: Uint8Array): Promise<PredictRequest> {
  return decodeInSlices(message, {
    decode: (rest) => PredictRequest.decode(rest),
    repeated: [
      { field: 5, property: 'targets', decode: (b: Uint8Array) => Target.decode(b) },
      { field: 7, property: 'pairs', decode: (b: Uint8Array) => TargetPair.decode(b) },
      { field: 9, property: 'slates', decode: (b: Uint8Array) => TargetSlate.decode(b) },
    ],
    ...live,
  });
}

/** Field by field; bytes compared as plain bytes (a Buffer and a Uint8Array of the same bytes are equal). */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return Uint8Array.from(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

async function assertSameAsGenerated(message: Uint8Array, label: string, wellFormed = true): Promise<void> {
  let expected: PredictRequest | undefined;
  let expectedError: unknown;
  try {
    expected = await generatedRowByRow(message);
  } catch (err) {
    expectedError = err;
  }
  if (wellFormed) {
    let whole: PredictRequest | undefined;
    try {
      whole = PredictRequest.decode(message);
    } catch {}
    if (expected === undefined)
      assert.equal(whole, undefined, `${label}: whole-message decoding did not throw`);
    else assert.deepEqual(plain(whole!), plain(expected), `${label}: whole-message decoding differs`);
  }
  let columnar: Awaited<ReturnType<typeof decodePredictColumns>> | undefined;
  let columnarError: unknown;
  try {
    columnar = await decodePredictColumns(message, live.signal, live.deadline);
  } catch (err) {
    columnarError = err;
  }
  if (expected === undefined) {
    assert.ok(
      columnarError !== undefined,
      `${label}: the generated decoder throws (${expectedError}), columns did not`,
    );
    return;
  }
  assert.equal(columnarError, undefined, `${label}: columns threw, the generated decoder did not`);
  const got = columnar!;
  const { targets, pairs, slates } = got.rows;
  assert.equal(targets.count, expected.targets.length, `${label}: targets`);
  expected.targets.forEach((t, r) => {
    assert.equal(targets.id(r), t.id, `${label}: targets[${r}].id`);
    assert.equal(targets.valueCount(r), t.featureValues.length, `${label}: targets[${r}] value count`);
    t.featureValues.forEach((v, c) => {
      assert.deepEqual(
        new Uint8Array(targets.value(r, c)),
        new Uint8Array(v),
        `${label}: targets[${r}][${c}]`,
      );
      assert.equal(targets.valueLength(r, c), v.length);
      const source = targets.valueSource(r, c);
      const from = targets.valueFrom(r, c);
      assert.deepEqual(new Uint8Array(source.subarray(from, from + v.length)), new Uint8Array(v));
    });
  });
  assert.equal(pairs.count, expected.pairs.length, `${label}: pairs`);
  expected.pairs.forEach((p, r) => {
    assert.equal(pairs.first(r), p.firstTargetIndex, `${label}: pairs[${r}].first_target_index`);
    assert.equal(pairs.second(r), p.secondTargetIndex, `${label}: pairs[${r}].second_target_index`);
    assert.equal(pairs.valueCount(r), p.featureValues.length);
    p.featureValues.forEach((v, c) => {
      assert.deepEqual(new Uint8Array(pairs.value(r, c)), new Uint8Array(v), `${label}: pairs[${r}][${c}]`);
    });
  });
  assert.equal(slates.count, expected.slates.length, `${label}: slates`);
  expected.slates.forEach((s, r) => {
    assert.deepEqual([...slates.indices(r)], s.slateTargetIndices, `${label}: slates[${r}] indices`);
    assert.equal(slates.valueCount(r), s.featureValues.length);
    s.featureValues.forEach((v, c) => {
      assert.deepEqual(new Uint8Array(slates.value(r, c)), new Uint8Array(v), `${label}: slates[${r}][${c}]`);
    });
  });
  // The rest of the message, and the generated messages' rows read through the same interfaces.
  const { rows: _rows, ...rest } = got;
  assert.deepEqual(
    plain(rest),
    plain({ ...expected, targets: [], pairs: [], slates: [] }),
    `${label}: other fields`,
  );
  const viaMessages = predictRows(expected);
  assert.equal(viaMessages.targets.count, targets.count);
}

describe('columnar request decoding equals the generated decoder', () => {
  test('seeded random requests, plain and with unknown fields, wrong wire types, any field order', async () => {
    reseed(7);
    for (let i = 0; i < 300; i++) {
      const edgy = i % 3 !== 0;
      await assertSameAsGenerated(request(int(30), int(30), edgy), `random #${i}`);
    }
  });

  test('edge cases: empty message, empty rows, defaults, int32 wrap-around, tag 0 and end-group inside a row', async () => {
    const cases: [string, number[]][] = [
      ['empty message', []],
      ['one empty target', len(5, [])],
      ['empty pair and slate', [...len(7, []), ...len(9, [])]],
      ['empty packed indices', len(9, len(1, []))],
      ['empty value', len(5, len(2, []))],
      ['int32 from a 64-bit varint', len(7, [...vint(1, 2n ** 40n + 3n), ...vint(2, -5)])],
      ['uint32 over 2^31', len(9, [...vint(1, 2 ** 31 + 9), ...vint(1, 2 ** 32 - 1)])],
      ['tag 0 ends a target', len(5, [...len(1, utf8('a')), 0, ...len(2, [1, 2])])],
      ['end-group ends a pair', len(7, [...vint(1, 3), ...key(9, 4), ...vint(2, 4)])],
      ['group skipped in a slate', len(9, [...key(7, 3), ...vint(1, 5), ...key(7, 4), ...vint(1, 6)])],
      ['field number 0, wire type 2', len(5, [2, 1, 65, ...len(1, utf8('b'))])],
      ['id as varint', len(5, vint(1, 5))],
      ['index as LEN (skipped)', len(7, len(1, [1, 2]))],
      ['overlong varint in a row', len(7, [8, ...Array(10).fill(0xff), 1])],
      ['value longer than its row', len(5, [...key(2, 2), 9, 1, 2])],
      ['packed indices running past the row', len(9, [...key(1, 2), 5, 1])],
      ['truncated unknown fixed64', len(5, [...key(6, 1), 1, 2, 3])],
      ['bad wire type 6', len(5, [...key(6, 6), 1])],
      ['bad wire type 7 in a slate', len(9, [...key(3, 7)])],
      ['invalid UTF-8 id', len(5, len(1, [0xff, 0xfe, 0x41]))],
      ['lone group end field 1', len(5, key(1, 4))],
      ['a varint runs past its row, into the next field', [...len(5, [0x9d]), ...len(5, len(1, utf8('b')))]],
    ];
    const invalid = /tag 0|end-group ends|lone group end|runs past its row/;
    for (const [label, fields] of cases)
      await assertSameAsGenerated(Uint8Array.from(fields), label, !invalid.test(label));
  });

  test('truncated and corrupted messages throw where the generated decoder throws', async () => {
    reseed(11);
    for (let i = 0; i < 200; i++) {
      const whole = request(1 + int(5), 1 + int(5), true);
      const cut = whole.subarray(0, int(whole.length));
      await assertSameAsGenerated(cut, `truncated #${i} at ${cut.length}/${whole.length}`, false);
      const flipped = Uint8Array.from(whole);
      for (let k = 0; k < 3; k++) flipped[int(flipped.length)] = int(256);
      await assertSameAsGenerated(flipped, `corrupted #${i}`, false);
    }
  });

  test('the largest accepted shapes: 100,000 targets and pairs, 10,000 slates of 10, a 10,000-index slate', async () => {
    const encoded = PredictRequest.encode({
      modelConfigId: 'm',
      trackingId: 't',
      contextFeatures: [],
      targetInputSchema: [],
      targets: Array.from({ length: 100_000 }, (_, i) => ({
        id: `t${i}`,
        featureValues: [Uint8Array.of(i & 255, 1, 2, 3), Uint8Array.of(i >> 8)],
      })),
      pairInputSchema: [],
      pairs: Array.from({ length: 100_000 }, (_, i) => ({
        firstTargetIndex: i,
        secondTargetIndex: 99_999 - i,
        featureValues: [Uint8Array.of(i & 255, 0, 0, 63)],
      })),
      slateInputSchema: [],
      slates: [
        ...Array.from({ length: 10_000 }, (_, i) => ({
          slateTargetIndices: Array.from({ length: 10 }, (_, k) => i * 10 + k),
          featureValues: [Uint8Array.of(k8(i))],
        })),
        { slateTargetIndices: Array.from({ length: 10_000 }, (_, k) => k), featureValues: [] },
      ],
      returnTargetScores: false,
    }).finish();
    await assertSameAsGenerated(encoded, 'largest');
  });
});

function k8(i: number): number {
  return i % 251;
}
