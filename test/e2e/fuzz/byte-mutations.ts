/**
 * Byte-level mutations of an encoded protobuf request: what a broken client, a proxy bug or an
 * attacker puts on the wire. Each takes valid request bytes and returns other bytes, sent as they
 * are (through a pass-through serializer). The server must answer each with a documented status:
 * INVALID_ARGUMENT when the bytes do not decode, or whatever the decoded (possibly valid) request
 * deserves.
 */
import type { Random } from './random.js';

export interface ByteMutation {
  name: string;
  mutate(bytes: Uint8Array, random: Random): Uint8Array;
}

/** A protobuf varint. */
export function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** A field key (number and wire type). */
export function tag(field: number, wireType: number): number[] {
  return varint(field * 8 + wireType);
}

/** A length-delimited field holding `payload`. */
export function lengthDelimited(field: number, payload: Uint8Array | number[]): Uint8Array {
  return Uint8Array.from([...tag(field, 2), ...varint(payload.length), ...payload]);
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Invalid UTF-8 sequences: a lone continuation byte, an overlong NUL, a surrogate, a cut sequence, 0xFF. */
export const INVALID_UTF8: readonly number[][] = [
  [0x80],
  [0xc0, 0x80],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xff, 0xfe],
  [0x61, 0x00, 0xc3],
];

export const BYTE_MUTATIONS: readonly ByteMutation[] = [
  {
    name: 'truncated',
    mutate: (b, r) => b.slice(0, r.int(Math.max(1, b.length))),
  },
  {
    name: 'bit flips',
    mutate: (b, r) => {
      const out = b.slice();
      const flips = 1 + r.int(4);
      for (let i = 0; i < flips && out.length > 0; i++) out[r.int(out.length)]! ^= 1 << r.int(8);
      return out;
    },
  },
  {
    name: 'random byte overwritten',
    mutate: (b, r) => {
      const out = b.slice();
      if (out.length > 0) out[r.int(out.length)] = r.int(256);
      return out;
    },
  },
  {
    name: 'huge length prefix',
    // A length-delimited field claiming far more bytes than follow (and one claiming 2^35).
    mutate: (b, r) =>
      concat(
        b,
        Uint8Array.from([...tag(1 + r.int(10), 2), ...varint(r.pick([1 << 20, 2 ** 31 - 1, 2 ** 35])), 1, 2]),
      ),
  },
  {
    name: 'wrong wire type',
    // A known field number sent with another wire type (varint, fixed64, group start, fixed32, or the invalid 6 and 7).
    mutate: (b, r) => {
      const wireType = r.pick([0, 1, 3, 4, 5, 6, 7]);
      const payload = wireType === 1 ? 8 : wireType === 5 ? 4 : 0;
      const body = wireType === 0 ? varint(r.int(1000)) : Array.from({ length: payload }, () => r.int(256));
      return concat(b, Uint8Array.from([...tag(1 + r.int(10), wireType), ...body]));
    },
  },
  {
    name: 'field number 0',
    mutate: (b) => concat(Uint8Array.of(0x00, 0x01), b),
  },
  {
    name: 'deep nesting',
    // A message field nested thousands of levels deep (field 3 or 4: repeated messages in every request here).
    mutate: (b, r) => {
      const depth = r.pick([100, 1000, 5000]);
      const field = r.pick([3, 4, 5, 7]);
      let inner: Uint8Array = new Uint8Array(0);
      for (let i = 0; i < depth; i++) inner = lengthDelimited(field, inner);
      return concat(b, inner);
    },
  },
  {
    name: 'random bytes',
    mutate: (_b, r) => Uint8Array.from({ length: r.int(200) }, () => r.int(256)),
  },
  {
    name: 'empty message',
    mutate: () => new Uint8Array(0),
  },
  {
    name: 'overlong varint',
    mutate: (b, r) => concat(b, Uint8Array.from([...tag(1 + r.int(10), 0), ...Array(11).fill(0xff), 0x01])),
  },
  {
    name: 'invalid UTF-8 in a string field',
    // Field 1 or 2 is a string in every request here (model_config_id / entity, tracking_id / model_name).
    mutate: (b, r) => concat(b, lengthDelimited(1 + r.int(2), r.pick(INVALID_UTF8))),
  },
  {
    name: 'duplicated and spliced',
    mutate: (b, r) => {
      const cut = r.int(b.length + 1);
      return concat(b.slice(0, cut), b, b.slice(cut));
    },
  },
];
