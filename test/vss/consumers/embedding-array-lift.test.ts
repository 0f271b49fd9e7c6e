/**
 * Vectors read from an event's bytes (embedding-array-lift.ts) give exactly what decoding the whole
 * message with JSON.parse gave before: the same event with bit-identical vectors, or the same
 * refusal, on thousands of events of both shapes with numbers written every way JSON allows (and
 * some it does not), plus the traps: `embedding` keys elsewhere, duplicated keys, keys ending in
 * `"embedding`, EOF markers carrying a vector, a byte order mark after a vector.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { liftEmbeddingArrays } from '../../../src/vss/consumers/embedding-array-lift.js';
import { parseEmbeddingEvent } from '../../../src/vss/consumers/embedding-event.js';
import { isEofMarker, parseEofMarker } from '../../../src/vss/consumers/eof-marker.js';
import {
  decodeJsonObject,
  eventKeyOf,
  parseIngestionMessage,
} from '../../../src/vss/consumers/ingestion-message.js';
import { seededRandom } from '../../support/raw-protobuf.js';

/** The decoding as it was before the lift: the whole message through JSON.parse. */
function byJsonParse(payload: Uint8Array) {
  const message = decodeJsonObject(payload);
  if (isEofMarker(message)) return { kind: 'eof', marker: parseEofMarker(message) };
  return { kind: 'embedding', event: parseEmbeddingEvent(message, eventKeyOf(payload)) };
}

/** Vectors as their float32 bit patterns, so -0 and 0 differ; everything else as it is. */
function comparable(value: unknown): unknown {
  if (value instanceof Float32Array) return { bits: [...new Uint32Array(value.slice().buffer)] };
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, comparable(v)]));
  if (Array.isArray(value)) return value.map(comparable);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v)]));
  }
  return value;
}

function outcome(parse: (payload: Uint8Array) => unknown, payload: Uint8Array) {
  try {
    return { ok: comparable(parse(payload)) };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

function assertSame(payload: Uint8Array): void {
  const text = Buffer.from(payload).toString('utf8');
  assert.deepStrictEqual(outcome(parseIngestionMessage, payload), outcome(byJsonParse, payload), text);
}

/** The same cases every run. */
const random = (seed: number) => seededRandom(seed).rand;

const digits = (next: () => number, count: number, first = '0123456789') => {
  let s = first[Math.floor(next() * first.length)]!;
  for (let i = 1; i < count; i++) s += String(Math.floor(next() * 10));
  return s;
};

/** A number as some producer might write it: mostly plain decimals, sometimes anything JSON has. */
function numberText(next: () => number): string {
  const sign = next() < 0.4 ? '-' : '';
  const r = next();
  if (r < 0.45) return `${sign}0.${digits(next, 1 + Math.floor(next() * 8))}`;
  if (r < 0.6)
    return `${sign}${digits(next, 1 + Math.floor(next() * 4), '123456789')}.${digits(next, 1 + Math.floor(next() * 12))}`;
  if (r < 0.68) return `${sign}${digits(next, 1 + Math.floor(next() * 17), '123456789')}`;
  if (r < 0.72) return `${sign}0`;
  if (r < 0.78) return `${sign}0.${digits(next, 14 + Math.floor(next() * 8))}`; // 15+ digits
  if (r < 0.84)
    return `${sign}${digits(next, 1, '123456789')}.${digits(next, 3)}e${next() < 0.5 ? '-' : '+'}${Math.floor(next() * 45)}`;
  if (r < 0.87) return `${sign}1E${Math.floor(next() * 40)}`;
  if (r < 0.9) return `${sign}${String(Math.fround(next() * 1000))}`;
  if (r < 0.92) return ` ${sign}0.5`; // whitespace: JSON, not the plain form
  if (r < 0.94) return `${sign}01`; // not JSON
  if (r < 0.96) return `${sign}.5`; // not JSON
  if (r < 0.98) return `${sign}1.`; // not JSON
  return `${sign}1e39`; // beyond float32
}

const vectorText = (next: () => number, dimension: number) =>
  `[${Array.from({ length: dimension }, () => numberText(next)).join(',')}]`;

/** An event of the design's shape (maps as JSON strings) or the original's (maps as objects). */
function eventText(next: () => number, vectors: string[]): string {
  const [index, search] = vectors;
  if (next() < 0.5) {
    return `{"entity":"catalog","model_name":"clip","candidate_id":"c${Math.floor(next() * 1000)}","version":3,"job_id":"j","index_space":{"variants_version_map":"{\\"organic\\":3}","variants_index_map":"{\\"organic\\":true}","embedding":${index},"operation":"A","payload":"{\\"brand\\":\\"a\\"}"}${search === undefined ? '' : `,"search_space":{"embedding":${search}}`}}`;
  }
  return `{"entity":"catalog","model_name":"clip","candidate_id":${Math.floor(next() * 1000)},"embedding_store_version":"3","index_space":{"variants_version_map":{"organic":3},"embedding":${index},"variants_index_map":{"organic":true},"operation":"ADD","payload":{"brand":"a"}}${search === undefined ? ',"search_space":null' : `,"search_space":{"embedding":${search}}`}}`;
}

const bytes = (text: string) => new Uint8Array(Buffer.from(text));

describe('embedding vectors read from the bytes', () => {
  test('plain events are lifted, and decode to exactly what JSON.parse gave', () => {
    const next = random(7);
    for (let i = 0; i < 300; i++) {
      const plain = () =>
        `[${Array.from({ length: 16 }, () => `${next() < 0.5 ? '-' : ''}0.${digits(next, 6)}`).join(',')}]`;
      const vectors = next() < 0.3 ? [plain(), plain()] : [plain()];
      const payload = bytes(eventText(next, vectors));
      assert.notEqual(liftEmbeddingArrays(payload), undefined, 'a plain event takes the lift');
      assertSame(payload);
    }
  });

  test('numbers in every form, valid or not: the same events and the same refusals', () => {
    const next = random(11);
    let lifted = 0;
    for (let i = 0; i < 3000; i++) {
      const dimension = 1 + Math.floor(next() * 6);
      const vectors =
        next() < 0.3
          ? [vectorText(next, dimension), vectorText(next, dimension)]
          : [vectorText(next, dimension)];
      const payload = bytes(eventText(next, vectors));
      if (liftEmbeddingArrays(payload) !== undefined) lifted++;
      assertSame(payload);
    }
    // Both paths were exercised.
    assert.ok(lifted > 300 && lifted < 2700, `${lifted} of 3000 lifted`);
  });

  test('traps: embedding keys elsewhere, duplicates, look-alike keys, EOF markers, byte order marks', () => {
    const v = '[0.5,-0.25,1]';
    const cases = [
      // a payload object (the original shape) with a key named embedding
      `{"entity":"catalog","model_name":"clip","candidate_id":1,"embedding_store_version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"ADD","payload":{"embedding":[1,2]}}}`,
      // the vector key twice: JSON.parse keeps the last
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"embedding":[9],"operation":"A"}}`,
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"embedding":"x","operation":"A"}}`,
      // a key that ends in "embedding
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"x\\"embedding":${v},"operation":"A"}}`,
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"x\\"embedding":[1],"operation":"A"}}`,
      // the text of the key inside a string value
      `{"entity":"catalog","model_name":"clip","candidate_id":"\\"embedding\\":[1]","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"}}`,
      // a vector at the top level only
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"embedding":${v},"index_space":{"variants_version_map":{"organic":3},"operation":"D"}}`,
      // three vectors
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A","payload":{"embedding":[1]}},"search_space":{"embedding":${v}}}`,
      // an EOF marker that carries a vector
      `{"eof":true,"entity":"catalog","model_name":"clip","version":3,"partition":0,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"}}`,
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"eof":true,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"}}`,
      // empty vectors, a vector where an object belongs, a search space that is not an object
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":[],"operation":"D"}}`,
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"},"search_space":[{"embedding":${v}}]}`,
      // not JSON around a plain vector
      `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"}`,
      `{"entity":"catalog" "model_name":"clip","candidate_id":"c","version":3,"index_space":{"embedding":${v}}}`,
      `["embedding":${v}]`,
      `{"embedding":${v}}`,
    ];
    for (const text of cases) assertSame(bytes(text));

    // A byte order mark: dropped at the start of a message, refused after a vector.
    const event = `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"}}`;
    const bom = [0xef, 0xbb, 0xbf];
    const at = event.indexOf(v) + v.length;
    assertSame(new Uint8Array([...bom, ...Buffer.from(event)]));
    assertSame(new Uint8Array([...Buffer.from(event.slice(0, at)), ...bom, ...Buffer.from(event.slice(at))]));
    // … and between two vectors.
    const two = `{"entity":"catalog","model_name":"clip","candidate_id":"c","version":3,"index_space":{"variants_version_map":{"organic":3},"embedding":${v},"operation":"A"},"search_space":{"embedding":${v}}}`;
    const between = two.indexOf(v) + v.length;
    assertSame(
      new Uint8Array([...Buffer.from(two.slice(0, between)), ...bom, ...Buffer.from(two.slice(between))]),
    );
    // Not UTF-8 before, between and after the vectors.
    const bad = [0xff];
    assertSame(new Uint8Array([...Buffer.from(event.slice(0, 10)), ...bad, ...Buffer.from(event.slice(10))]));
    assertSame(new Uint8Array([...Buffer.from(event.slice(0, at)), ...bad, ...Buffer.from(event.slice(at))]));
  });

  test('the most digits the plain form reads, and numbers whose 17-19 digits one division would round wrong', () => {
    const fifteen = '123456789012345';
    for (const number of [
      fifteen,
      `0.${fifteen.slice(1)}`,
      `-${fifteen.slice(0, 5)}.${fifteen.slice(5)}`,
      '9007199254740993',
      '0.1000000000000000055511151231257827',
    ]) {
      assertSame(bytes(eventText(random(3), [`[${number},1]`])));
    }
  });
});
