/**
 * A protobuf writer for tests that must write anything, unknown fields and wrong wire types
 * included (the generated encoders only write well-formed messages), and a seeded random source so
 * the generated messages are the same on every run.
 */
import { seededRandom as uniform } from '../../src/platform/random.js';

export function varint(value: bigint | number): number[] {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}

export const key = (field: number, wireType: number) => varint(field * 8 + wireType);
export const len = (field: number, payload: number[]) => [
  ...key(field, 2),
  ...varint(payload.length),
  ...payload,
];
export const vint = (field: number, value: bigint | number) => [...key(field, 0), ...varint(value)];
export const utf8 = (text: string) => [...Buffer.from(text)];

/** Test cases drawn from a seeded generator (platform/random.ts). */
export function seededRandom(seed = 1) {
  let next = uniform(seed);
  const rand = () => next();
  const int = (n: number) => Math.floor(rand() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  const maybe = (p: number, make: () => number[]) => (rand() < p ? make() : []);
  /**
   * Puts `list` in a random order, in place (Fisher–Yates). Not `sort(() => rand() - 0.5)`: the
   * order a sort gives with an inconsistent comparator is the engine's choice (V8 in Node 26 orders
   * differently from Node 20), so the messages would differ from one Node to the next.
   */
  const shuffle = <T>(list: T[]): T[] => {
    for (let i = list.length - 1; i > 0; i--) {
      const j = int(i + 1);
      [list[i], list[j]] = [list[j]!, list[i]!];
    }
    return list;
  };
  /** Starts the sequence again from `next`, so each test draws the same cases alone or in a run. */
  const reseed = (seed: number) => {
    next = uniform(seed);
  };
  return { rand, int, pick, maybe, shuffle, reseed };
}
