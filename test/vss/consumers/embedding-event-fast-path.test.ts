import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seededRandom } from '../../../src/platform/random.js';
import { embeddingEventBySchema } from '../../../src/vss/consumers/embedding-event.js';
import { plainEmbeddingEvent } from '../../../src/vss/consumers/embedding-event-fast-path.js';

/** The two shapes the consumers accept (embedding-event.test.ts has the same two). */
const design = () => ({
  entity: 'catalog',
  model_name: 'clip',
  candidate_id: 'c1',
  version: 3,
  job_id: 'job-1',
  index_space: {
    variants_version_map: '{"organic":3,"ad":3}',
    embedding: [0.5, -1.25, 2, 0.125],
    variants_index_map: '{"organic":true,"ad":false}',
    operation: 'A',
    payload: '{"brand":"a","price":12,"live":true,"tags":["x","y"],"gone":null}',
  },
  search_space: { embedding: [1, 0, 0, -0] },
});

const original = () => ({
  entity: 'catalog',
  model_name: 'clip',
  candidate_id: 17,
  environment: 'prd',
  embedding_store_version: '3',
  partition: '5',
  index_space: {
    variants_version_map: { organic: 3, ad: 3 },
    embedding: [0.5, -1.25, 2, 0.125],
    variants_index_map: { organic: true, ad: false },
    operation: 'ADD',
    payload: { brand: 'a', price: 12, live: true, tags: ['x', 'y'] },
  },
  search_space: null,
});

const many = (count: number, value: (i: number) => unknown) =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, value(i)]));

/** Values each field is set to (`DELETE` removes it): valid ones, edge cases and broken ones. */
const DELETE = Symbol('delete');
const versions = [0, 1, 2 ** 31 - 1, 2 ** 31, '7', '07', '0', ' 7', 7.5, -3, '1e3', null, true, DELETE];
const vectors = [
  [],
  [1],
  [0.1, 0.2],
  [3.5e38],
  [-3.4e38],
  [3.4028234663852886e38],
  [Number.NaN],
  [Number.POSITIVE_INFINITY],
  ['1'],
  [null],
  [true],
  'str',
  null,
  DELETE,
  {},
];
const MUTATIONS: Record<string, unknown[]> = {
  entity: ['', 'a b', 'x'.repeat(128), 'x'.repeat(129), 5, null, '_a', 'a.b-c_d', DELETE],
  model_name: ['', 'm', 'm/2', 7, DELETE],
  candidate_id: [
    '',
    'x'.repeat(1024),
    'x'.repeat(1025),
    'a\u0000b',
    'é😀',
    0,
    -1,
    1.5,
    2 ** 53,
    Number.MAX_SAFE_INTEGER,
    -0,
    true,
    null,
    DELETE,
  ],
  version: versions,
  embedding_store_version: versions,
  job_id: ['', 'j', 'x'.repeat(256), 'x'.repeat(257), 5, null, DELETE],
  index_space: [null, [], 'str', DELETE],
  extra: [1, { nested: true }],
  'index_space.variants_version_map': [
    '{"a":1}',
    '{"A":1}',
    '{"a":0}',
    '{"a":"2"}',
    '{}',
    '[1]',
    'not json',
    '"{}"',
    '{"__proto__":1}',
    { a: 1 },
    { a: 'x' },
    many(64, () => 1),
    many(65, () => 1),
    null,
    DELETE,
  ],
  'index_space.variants_index_map': ['{"a":true}', '{"a":1}', { a: false }, '[]', null, DELETE],
  'index_space.embedding': vectors,
  'index_space.operation': [
    'A',
    'D',
    'P',
    'ADD',
    'DELETE',
    'UPSERT_PAYLOAD',
    'X',
    'a',
    'constructor',
    1,
    null,
    DELETE,
  ],
  'index_space.payload': [
    '{"a":1}',
    '{"a":null}',
    '{"to_be_indexed_x":true}',
    '{"a":[1]}',
    '{"a":["x"]}',
    '{"a":{}}',
    '{"a b":1}',
    '{"__proto__":"x"}',
    '{"a":1e400}',
    'bad json',
    '[]',
    { a: 'x' },
    many(256, (i) => i),
    many(257, (i) => i),
    null,
    DELETE,
  ],
  'index_space.extra': [1],
  search_space: [null, {}, { embedding: [] }, { embedding: [1, 2] }, { embedding: 'x' }, [], 'x', DELETE],
};
const FIELDS = Object.keys(MUTATIONS);

/** Whole numbers below `n`, seeded. */
function seededInts(seed: number) {
  const next = seededRandom(seed);
  return (n: number) => Math.floor(next() * n);
}

function mutate(event: Record<string, unknown>, path: string, value: unknown): void {
  const [head, tail] = path.split('.') as [string, string | undefined];
  let target = event;
  let key = head;
  if (tail !== undefined) {
    const inner = event[head];
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return;
    target = inner as Record<string, unknown>;
    key = tail;
  }
  if (value === DELETE) delete target[key];
  else target[key] = value;
}

/** The schema's answer: the event, or 'rejected'. */
function bySchema(message: unknown) {
  try {
    return embeddingEventBySchema(message, 'k');
  } catch {
    return 'rejected';
  }
}

describe('embedding events: the fast path and the schema agree', () => {
  test('plainly valid events of both shapes take the fast path and decode as the schema decodes them', () => {
    for (const make of [design, original]) {
      for (const message of [make(), JSON.parse(JSON.stringify(make()))]) {
        const fast = plainEmbeddingEvent(message, 'k');
        assert.ok(fast !== undefined, 'a plain event takes the fast path');
        assert.deepEqual(fast, bySchema(message));
      }
    }
  });

  test('events carrying the same variant map text share one decoded map; other text decodes afresh', () => {
    const first = plainEmbeddingEvent(design(), 'k1')!;
    const second = plainEmbeddingEvent(design(), 'k2')!;
    assert.equal(second.variantVersions, first.variantVersions);
    assert.equal(second.indexFlags, first.indexFlags);
    const other = design();
    other.index_space.variants_version_map = '{"organic":4,"ad":4}';
    other.index_space.variants_index_map = '{"organic":false}';
    const third = plainEmbeddingEvent(other, 'k3')!;
    assert.deepEqual(
      [...third.variantVersions],
      [
        ['organic', 4],
        ['ad', 4],
      ],
    );
    assert.deepEqual([...third.indexFlags!], [['organic', false]]);
    // A text the fast path refuses is refused again, and leaves the last accepted map in place.
    const broken = design();
    broken.index_space.variants_version_map = '{"organic":-1}';
    assert.equal(plainEmbeddingEvent(broken, 'k4'), undefined);
    assert.equal(plainEmbeddingEvent(broken, 'k5'), undefined);
    assert.equal(plainEmbeddingEvent(other, 'k6')!.variantVersions, third.variantVersions);
    assert.deepEqual(plainEmbeddingEvent(design(), 'k'), bySchema(design()));
  });

  test('on thousands of seeded variations the fast path never accepts what the schema refuses, and decodes alike', () => {
    const next = seededInts(20261125);
    let fastAccepted = 0;
    let schemaOnly = 0;
    for (let sample = 0; sample < 4000; sample++) {
      const message: Record<string, unknown> = next(2) === 0 ? design() : original();
      for (let m = next(4); m > 0; m--) {
        const field = FIELDS[next(FIELDS.length)]!;
        const values = MUTATIONS[field]!;
        mutate(message, field, values[next(values.length)]);
      }
      for (const form of [message, JSON.parse(JSON.stringify(message))]) {
        const fast = plainEmbeddingEvent(form, 'k');
        const schema = bySchema(form);
        if (fast === undefined) {
          if (schema !== 'rejected') schemaOnly++;
          continue;
        }
        fastAccepted++;
        assert.notEqual(
          schema,
          'rejected',
          `the fast path accepted what the schema refuses: ${JSON.stringify(form)}`,
        );
        assert.deepEqual(fast, schema, JSON.stringify(form));
      }
    }
    // Both paths are exercised, and the fast one takes most valid events.
    assert.ok(fastAccepted > 1000, `fast path accepted ${fastAccepted}`);
    assert.ok(schemaOnly < fastAccepted / 10, `${schemaOnly} valid events went the long way`);
  });
});
