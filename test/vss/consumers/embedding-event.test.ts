import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_JOB_ID } from '../../../src/vss/consumers/eof-marker.js';
import { RejectedEvent } from '../../../src/vss/consumers/event-batch.js';
import { eventKeyOf, parseIngestionMessage } from '../../../src/vss/consumers/ingestion-message.js';

const bytes = (value: unknown): Uint8Array =>
  value instanceof Uint8Array
    ? value
    : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
const parse = (value: unknown) => parseIngestionMessage(bytes(value));

/** The design's shape: maps and payload as JSON strings, `version`, operation letters. */
function design(overrides: Record<string, unknown> = {}, space: Record<string, unknown> = {}) {
  return {
    entity: 'catalog',
    model_name: 'clip',
    candidate_id: 'c1',
    version: 3,
    index_space: {
      variants_version_map: '{"organic":3,"ad":3}',
      embedding: [0.5, -1.25, 2, 0.125],
      variants_index_map: '{"organic":true,"ad":false}',
      operation: 'A',
      payload: '{"brand":"a","price":12,"live":true,"tags":["x","y"]}',
      ...space,
    },
    search_space: { embedding: [1, 0, 0, 0] },
    ...overrides,
  };
}

/** The original system's shape: JSON maps, `embedding_store_version`, full operation names. */
function original(overrides: Record<string, unknown> = {}, space: Record<string, unknown> = {}) {
  return {
    entity: 'catalog',
    model_name: 'clip',
    candidate_id: 'c1',
    environment: 'prd',
    embedding_store_version: 3,
    partition: '5',
    index_space: {
      variants_version_map: { organic: 3, ad: 3 },
      embedding: [0.5, -1.25, 2, 0.125],
      variants_index_map: { organic: true, ad: false },
      operation: 'ADD',
      payload: { brand: 'a', price: 12, live: true, tags: ['x', 'y'] },
      ...space,
    },
    search_space: { embedding: [1, 0, 0, 0] },
    ...overrides,
  };
}

function rejects(value: unknown, field: string | undefined, reason: RegExp): RejectedEvent {
  let caught: unknown;
  assert.throws(
    () => parse(value),
    (err: unknown) => {
      caught = err;
      return err instanceof RejectedEvent;
    },
  );
  const rejected = caught as RejectedEvent;
  assert.equal(rejected.field, field, rejected.reason);
  assert.match(rejected.reason, reason);
  return rejected;
}

describe('embedding event schema', () => {
  test('the design shape and the original shape parse to the same event', () => {
    const a = parse(design());
    const b = parse(original());
    assert.equal(a.kind, 'embedding');
    assert.equal(b.kind, 'embedding');
    if (a.kind !== 'embedding' || b.kind !== 'embedding') return;
    const { eventKey: keyA, ...eventA } = a.event;
    const { eventKey: keyB, ...eventB } = b.event;
    assert.deepEqual(eventA, eventB);
    assert.notEqual(keyA, keyB);
    assert.equal(a.event.operation, 'A');
    assert.equal(a.event.version, 3);
    assert.deepEqual(
      [...a.event.variantVersions],
      [
        ['organic', 3],
        ['ad', 3],
      ],
    );
    assert.deepEqual(
      [...a.event.indexFlags!],
      [
        ['organic', true],
        ['ad', false],
      ],
    );
    assert.deepEqual([...a.event.embedding!], [0.5, -1.25, 2, 0.125]);
    assert.deepEqual([...a.event.searchEmbedding!], [1, 0, 0, 0]);
    assert.deepEqual(a.event.payload, { brand: 'a', price: 12, live: true, tags: ['x', 'y'] });
  });

  test('operations: A/ADD, D/DELETE, P/UPSERT_PAYLOAD; deletes and payload updates need no embedding', () => {
    for (const [letter, name] of [
      ['A', 'ADD'],
      ['D', 'DELETE'],
      ['P', 'UPSERT_PAYLOAD'],
    ] as const) {
      const embedding = letter === 'A' ? [1, 2, 3, 4] : [];
      const a = parse(design({}, { operation: letter, embedding }));
      const b = parse(original({}, { operation: name, embedding }));
      assert.ok(a.kind === 'embedding' && a.event.operation === letter);
      assert.ok(b.kind === 'embedding' && b.event.operation === letter);
      if (letter !== 'A') assert.ok(a.kind === 'embedding' && a.event.embedding === undefined);
    }
  });

  test('a version as decimal text, a numeric candidate id, null payload values and optional parts', () => {
    const message = parse({
      entity: 'catalog',
      model_name: 'clip',
      candidate_id: 12345,
      version: '7',
      job_id: 'job-9',
      index_space: {
        variants_version_map: '{"organic":"7"}',
        embedding: [1, 2],
        operation: 'A',
        payload: '{"brand":null,"size":"m"}',
      },
    });
    assert.ok(message.kind === 'embedding');
    const { event } = message;
    assert.equal(event.candidateId, '12345');
    assert.equal(event.version, 7);
    assert.equal(event.jobId, 'job-9');
    assert.equal(event.variantVersions.get('organic'), 7);
    assert.equal(event.indexFlags, undefined);
    assert.equal(event.searchEmbedding, undefined);
    assert.deepEqual(event.payload, { size: 'm' });
  });

  test('the event key is a hash of the bytes: the same message always gets the same key', () => {
    const message = bytes(design());
    const first = parseIngestionMessage(message);
    const again = parseIngestionMessage(Buffer.from(message));
    assert.ok(first.kind === 'embedding' && again.kind === 'embedding');
    assert.equal(first.event.eventKey, again.event.eventKey);
    assert.match(first.event.eventKey, /^[0-9a-f]{32}$/);
    assert.equal(first.event.eventKey, eventKeyOf(message));
  });

  describe('poison events are rejected with the field named', () => {
    const cases: [string, unknown, string | undefined, RegExp][] = [
      ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), undefined, /not UTF-8/],
      ['not JSON', '{"entity": ', undefined, /not JSON/],
      ['a JSON array', '[1, 2]', undefined, /must be a JSON object/],
      ['no entity', { ...design(), entity: undefined }, 'entity', /is required/],
      ['an entity with a slash', design({ entity: 'a/b' }), 'entity', /letters, digits/],
      ['an empty candidate id', design({ candidate_id: '' }), 'candidate_id', /empty/],
      ['a candidate id with NUL', design({ candidate_id: 'a\u0000b' }), 'candidate_id', /NUL/],
      ['a candidate id too long', design({ candidate_id: 'x'.repeat(1025) }), 'candidate_id', /1024/],
      ['a boolean candidate id', design({ candidate_id: true }), 'candidate_id', /non-empty string/],
      ['no version at all', { ...design(), version: undefined }, 'version', /required/],
      ['version 0', design({ version: 0 }), 'version', /positive integer/],
      ['a version that is not a number', design({ version: 'three' }), 'version', /positive integer/],
      [
        'versions that disagree',
        { ...original(), version: 4 },
        'embedding_store_version',
        /must equal version/,
      ],
      ['an unknown operation', design({}, { operation: 'X' }), 'index_space.operation', /A, D or P/],
      [
        'an add without embedding',
        design({}, { embedding: [] }),
        'index_space.embedding',
        /required for an add/,
      ],
      [
        'a non-finite number (1e400 parses to Infinity)',
        '{"entity":"catalog","model_name":"clip","candidate_id":"c","version":1,"index_space":{"variants_version_map":"{}","embedding":[1,2,1e400],"operation":"A"}}',
        'index_space.embedding[2]',
        /finite/,
      ],
      [
        'a string in the embedding',
        design({}, { embedding: [1, '2', 3, 4] }),
        'index_space.embedding[1]',
        /finite/,
      ],
      [
        'a value beyond float32',
        design({}, { embedding: [1, 2, 1e39, 4] }),
        'index_space.embedding[2]',
        /float32/,
      ],
      [
        'a search embedding that is not a list',
        design({ search_space: { embedding: 'x' } }),
        'search_space.embedding',
        /list of numbers/,
      ],
      [
        'a version map that is not JSON',
        design({}, { variants_version_map: '{organic:1}' }),
        'index_space.variants_version_map',
        /must be JSON/,
      ],
      [
        'a variant version that is not a positive integer',
        design({}, { variants_version_map: '{"organic":-1}' }),
        'index_space.variants_version_map.organic',
        /positive integer/,
      ],
      [
        'an index flag that is not a boolean',
        design({}, { variants_index_map: '{"organic":"yes"}' }),
        'index_space.variants_index_map.organic',
        /boolean/,
      ],
      [
        'a variant name no column can hold',
        original({}, { variants_version_map: { 'Organic!': 3 } }),
        // a key outside the safe alphabet is quoted in the field (it travels in a header)
        '"index_space.variants_version_map.Organic!"',
        /variant name/,
      ],
      [
        'a payload setting a membership flag',
        design({}, { payload: '{"to_be_indexed_organic":true}' }),
        'index_space.payload.to_be_indexed_organic',
        /membership flag/,
      ],
      [
        'a nested payload value',
        design({}, { payload: '{"dims":{"w":1}}' }),
        'index_space.payload.dims',
        /string, number, boolean/,
      ],
      ['a payload that is a list', design({}, { payload: '[1]' }), 'index_space.payload', /object/],
      ['no index_space', { ...design(), index_space: undefined }, 'index_space', /required/],
      ['an empty job id', design({ job_id: '' }), 'job_id', /empty/],
    ];
    for (const [what, message, field, reason] of cases) {
      test(what, () => {
        rejects(message, field, reason);
      });
    }

    test('a field naming an odd map key is quoted, on one line', () => {
      const rejected = rejects(
        original({}, { variants_version_map: { 'bad\nkey': 3 } }),
        JSON.stringify('index_space.variants_version_map.bad\nkey'),
        /variant name/,
      );
      assert.ok(!rejected.field!.includes('\n'));
    });
  });
});

describe('EOF marker schema', () => {
  test('the design marker', () => {
    const message = parse({
      eof: true,
      entity: 'catalog',
      model_name: 'clip',
      version: 3,
      job_id: 'j',
      partition: 2,
    });
    assert.deepEqual(message, {
      kind: 'eof',
      marker: { entity: 'catalog', modelName: 'clip', version: 3, jobId: 'j', partition: 2 },
    });
  });

  test('the original marker: candidate_id "EOF", partition as text, no job id', () => {
    const message = parse(original({ candidate_id: 'EOF', partition: '4' }));
    assert.deepEqual(message, {
      kind: 'eof',
      marker: { entity: 'catalog', modelName: 'clip', version: 3, jobId: DEFAULT_JOB_ID, partition: 4 },
    });
  });

  test('markers that can never count are rejected naming the field', () => {
    const marker = {
      eof: true,
      entity: 'catalog',
      model_name: 'clip',
      version: 3,
      job_id: 'j',
      partition: 0,
    };
    // The original producer leaves the partition empty: refused, not guessed.
    rejects(original({ candidate_id: 'EOF', partition: '' }), 'partition', /partition number/);
    rejects({ ...marker, partition: -1 }, 'partition', /partition number/);
    rejects({ ...marker, partition: undefined }, 'partition', /required/);
    rejects({ ...marker, version: undefined }, 'version', /required/);
    rejects({ ...marker, model_name: undefined }, 'model_name', /required/);
    rejects({ ...marker, job_id: 7 }, 'job_id', /string/);
  });
});
