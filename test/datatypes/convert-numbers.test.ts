import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { encodeValue } from '../../src/datatypes/codecs.js';
import { convertNumbers, convertValue } from '../../src/datatypes/convert.js';
import { copyElementRuns } from '../../src/datatypes/copy-runs.js';
import { allDataTypes, DataType, dataTypeInfo } from '../../src/datatypes/data-type.js';
import { runBytes } from '../../src/datatypes/number-runs.js';
import { nearestFloat32, random64, seededRandom } from './random.js';

const numericScalars = allDataTypes.filter((t) => dataTypeInfo(t).numeric && !dataTypeInfo(t).isVector);
const name = (type: DataType) => DataType[type];
const { INT64, UINT64 } = DataType;

/** `bytes` placed `offset` bytes into a fresh buffer (to exercise unaligned runs). */
function at(offset: number, bytes: Uint8Array): Uint8Array {
  const backing = new Uint8Array(bytes.length + offset);
  backing.set(bytes, offset);
  return backing.subarray(offset);
}

const int64Bytes = (values: bigint[]) => new Uint8Array(BigInt64Array.from(values).buffer);
const uint64Bytes = (values: bigint[]) => new Uint8Array(BigUint64Array.from(values).buffer);
const clamp = (v: bigint, min: bigint, max: bigint) => (v < min ? min : v > max ? max : v);

describe('convertNumbers: runs of elements between numeric types', () => {
  // Longer than one staging chunk (4096), so chunk boundaries are crossed.
  const COUNT = 5000;

  test('random 64-bit integers: INT64/UINT64 targets exact (saturating across signedness), floats rounded once', () => {
    const random = seededRandom(64);
    const signed = random64(random, COUNT, true);
    const unsigned = random64(random, COUNT, false);
    for (const offset of [0, 3]) {
      for (const [from, values, encode] of [
        [INT64, signed, int64Bytes],
        [UINT64, unsigned, uint64Bytes],
      ] as const) {
        const source = at(offset, encode(values));
        const run = (to: DataType) => {
          const out = new Uint8Array(runBytes(to, COUNT) + offset);
          convertNumbers(from, source, COUNT, to, out, offset);
          return out.subarray(offset);
        };
        assert.deepEqual(run(from), encode(values), `${name(from)} → itself, offset ${offset}`);
        assert.deepEqual(
          run(INT64),
          int64Bytes(values.map((v) => clamp(v, -(2n ** 63n), 2n ** 63n - 1n))),
          `${name(from)} → INT64`,
        );
        assert.deepEqual(
          run(UINT64),
          uint64Bytes(values.map((v) => clamp(v, 0n, 2n ** 64n - 1n))),
          `${name(from)} → UINT64`,
        );
        assert.deepEqual(
          [...new Float64Array(Uint8Array.from(run(DataType.FP64)).buffer)],
          values.map((v) => Number(v)),
          `${name(from)} → FP64 rounds once`,
        );
        assert.deepEqual(
          [...new Float32Array(Uint8Array.from(run(DataType.FP32)).buffer)],
          values.map((v) => (v > 2n ** 53n || v < -(2n ** 53n) ? nearestFloat32(v) : Math.fround(Number(v)))),
          `${name(from)} → FP32 rounds once, from the exact value`,
        );
        assert.deepEqual(
          [...new Int32Array(Uint8Array.from(run(DataType.INT32)).buffer)],
          values.map((v) => Number(clamp(v, -(2n ** 31n), 2n ** 31n - 1n))),
          `${name(from)} → INT32 saturates`,
        );
      }
    }
  });

  test('every pair of numeric types: a long unaligned run equals converting element by element', () => {
    const random = seededRandom(7);
    // Both ends, both sides of the chunk boundary, and a random sample in between.
    const checked = [
      ...Array.from({ length: 40 }, (_, i) => i),
      ...Array.from({ length: 20 }, (_, i) => 4086 + i),
      ...Array.from({ length: 10 }, (_, i) => COUNT - 10 + i),
      ...Array.from({ length: 100 }, () => Math.floor(random() * COUNT)),
    ];
    for (const from of numericScalars) {
      const size = dataTypeInfo(from).elementBytes;
      const source = new Uint8Array(COUNT * size);
      for (let i = 0; i < source.length; i++) source[i] = Math.floor(random() * 256);
      if (from === DataType.BOOL) for (let i = 0; i < source.length; i++) source[i]! &= 1;
      for (const to of [...numericScalars, DataType.BOOL_VECTOR]) {
        const out = new Uint8Array(runBytes(to, COUNT) + 1);
        convertNumbers(from, at(1, source), COUNT, to, out, 1);
        const got = out.subarray(1);
        const toSize = to === DataType.BOOL_VECTOR ? 1 : dataTypeInfo(to).elementBytes;
        for (const i of checked) {
          const element = source.subarray(i * size, (i + 1) * size);
          if (to === DataType.BOOL_VECTOR) {
            const bit = (got[i >>> 3]! >>> (i & 7)) & 1;
            assert.equal(
              bit,
              convertValue(element, from, DataType.BOOL)[0],
              `${name(from)} → BOOL_VECTOR [${i}]`,
            );
            continue;
          }
          const one = convertValue(element, from, to);
          const mine = got.subarray(i * toSize, (i + 1) * toSize);
          assert.deepEqual(mine, one, `${name(from)} → ${name(to)} element ${i}`);
        }
      }
    }
  });

  test('the same type is a byte copy: NaN payloads survive; BOOL is normalised to 0/1', () => {
    const nan = Uint8Array.of(0x01, 0x00, 0xc0, 0x7f); // a quiet NaN with a payload
    const out = new Uint8Array(4);
    convertNumbers(DataType.FP32, nan, 1, DataType.FP32_VECTOR, out);
    assert.deepEqual(out, nan);
    const bools = new Uint8Array(2);
    convertNumbers(DataType.BOOL, Uint8Array.of(7, 0), 2, DataType.BOOL, bools);
    assert.deepEqual([...bools], [1, 0]);
  });

  test('short input is INVALID_ARGUMENT, short output INTERNAL, non-numeric INVALID_ARGUMENT', () => {
    assert.throws(
      () => convertNumbers(INT64, new Uint8Array(15), 2, INT64, new Uint8Array(16)),
      (e: Error & { code?: string }) =>
        e.code === 'INVALID_ARGUMENT' && /take 16 bytes, got 15/.test(e.message),
    );
    assert.throws(
      () => convertNumbers(INT64, new Uint8Array(16), 2, INT64, new Uint8Array(16), 1),
      (e: Error & { code?: string }) => e.code === 'INTERNAL',
    );
    assert.throws(
      () => convertNumbers(DataType.STRING, new Uint8Array(4), 1, INT64, new Uint8Array(8)),
      /STRING is not a numeric type/,
    );
  });
});

describe('copyElementRuns', () => {
  /** The same copy, byte by byte (test reference). */
  function reference(
    size: number,
    run: number,
    rows: number,
    from: { bytes: Uint8Array; start: number; stride: number },
    to: { bytes: Uint8Array; start: number; stride: number },
    fromRows: Int32Array | null,
  ) {
    for (let r = 0; r < rows; r++) {
      const a = (from.start + (fromRows ? fromRows[r]! : r) * from.stride) * size;
      const b = (to.start + r * to.stride) * size;
      for (let i = 0; i < run * size; i++) to.bytes[b + i] = from.bytes[a + i]!;
    }
  }

  test('gathers and scatters strided runs of every element size, mapped rows, aligned or not', () => {
    const random = seededRandom(11);
    for (const size of [1, 2, 4, 8]) {
      for (const run of [1, 3]) {
        for (const offset of [0, 1, 4]) {
          const rows = 9;
          const stride = run + 2;
          const source = new Uint8Array(rows * stride * size + 64);
          for (let i = 0; i < source.length; i++) source[i] = Math.floor(random() * 256);
          const fromRows = Int32Array.from({ length: rows }, () => Math.floor(random() * rows));
          for (const map of [null, fromRows]) {
            const from = { bytes: at(offset, source), start: 1, stride };
            const mine = new Uint8Array(rows * (run + 1) * size + offset + 8);
            const theirs = mine.slice();
            const to = (bytes: Uint8Array) => ({ bytes: bytes.subarray(offset), start: 1, stride: run + 1 });
            copyElementRuns(size, run, rows, from, to(mine), map);
            reference(size, run, rows, from, to(theirs), map);
            assert.deepEqual(mine, theirs, `size ${size} run ${run} offset ${offset} mapped ${map !== null}`);
          }
        }
      }
    }
  });

  test('a run past either end is INTERNAL, never a silently dropped write', () => {
    const bytes = new Uint8Array(16);
    assert.throws(
      () =>
        copyElementRuns(
          8,
          1,
          3,
          { bytes, start: 0, stride: 1 },
          { bytes: new Uint8Array(32), start: 0, stride: 1 },
        ),
      /source out of range/,
    );
    assert.throws(
      () =>
        copyElementRuns(
          4,
          1,
          2,
          { bytes, start: 0, stride: 1 },
          { bytes: new Uint8Array(4), start: 0, stride: 1 },
        ),
      /target out of range/,
    );
  });

  test('encodeValue bytes of INT64 survive a gather exactly', () => {
    const values = [2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 63n - 1n];
    const column = encodeValue(DataType.INT64_VECTOR, values);
    const out = new Uint8Array(48);
    copyElementRuns(8, 1, 3, { bytes: column, start: 0, stride: 1 }, { bytes: out, start: 0, stride: 2 });
    const got = new BigInt64Array(out.buffer);
    assert.deepEqual([got[0], got[2], got[4]], values);
  });
});
