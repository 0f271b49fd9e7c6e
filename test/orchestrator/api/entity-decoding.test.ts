/**
 * The sliced decoding of a legacy request's entities (wire/entity-decoding.ts) replaces the generated
 * `Entity.decode`: for seeded random and hand-made messages at the byte level it must give exactly
 * the generated decoder's message (compared whole, field by field), and throw wherever it throws.
 * The reference is the generated decoding it replaces, `Entity.decode` of each entity's bytes in the
 * sliced decoder; for well-formed messages one `OrchestratorRequestProto.decode` of the whole message
 * gives the same (checked too). They differ only for invalid protobuf: a tag 0 or a stray end-group
 * tag directly in an entity (see request-columns.test.ts), or a feature whose length runs past its
 * entity (decoded whole, the generated decoder reads on into the next top-level field).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Entity, OrchestratorRequestProto } from '../../../src/gen/orchestrator/v1/orchestrator.js';
import { decodeLegacyInSlices, legacyDecoding } from '../../../src/orchestrator/wire/request-decoding.js';
import { precheckLegacy } from '../../../src/orchestrator/wire/request-precheck.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { decodeInSlices } from '../../../src/platform/protobuf/sliced-decode.js';
import { key, len, seededRandom, utf8, varint } from '../../support/raw-protobuf.js';

const { int, pick, maybe, shuffle, reseed } = seededRandom(1);

const text = () =>
  utf8(pick(['', 'c1', `catalog-${int(1e5)}`, 'ünïcødé 😀', 'x'.repeat(33 + int(40)), `id\u0000${int(9)}`]));

function unknownField(): number[] {
  const field = pick([4, 5, 9, 100, 536870911]);
  switch (int(5)) {
    case 0:
      return [...key(field, 0), ...varint(int(2 ** 31))];
    case 1:
      return [...key(field, 1), 1, 2, 3, 4, 5, 6, 7, 8];
    case 2:
      return [...key(field, 5), 1, 2, 3, 4];
    case 3:
      return len(field, text());
    default:
      return [...key(field, 3), ...key(1, 0), 7, ...len(2, text()), ...key(field, 4)];
  }
}
const wrongType = (field: number) =>
  pick([
    [...key(field, 0), 5],
    [...key(field, 5), 1, 2, 3, 4],
    [...key(field, 1), 1, 2, 3, 4, 5, 6, 7, 8],
  ]);

function feature(edgy: boolean): number[] {
  const parts: number[][] = [len(1, text())];
  for (let i = int(5); i > 0; i--) parts.push(len(2, text()));
  if (edgy) {
    parts.push(
      maybe(0.3, unknownField),
      maybe(0.2, () => wrongType(pick([1, 2]))),
      maybe(0.2, () => len(1, text())),
    );
    shuffle(parts);
  }
  return parts.flat();
}

function entity(edgy: boolean, ids = int(8)): number[] {
  const parts: number[][] = [len(1, utf8(pick(['catalog_id', 'user_id', '', 'ü'])))];
  for (let i = 0; i < ids; i++) parts.push(len(2, text()));
  for (let i = int(3); i > 0; i--) parts.push(len(3, feature(edgy)));
  if (edgy) {
    parts.push(
      maybe(0.3, unknownField),
      maybe(0.2, () => wrongType(pick([1, 2, 3]))),
      maybe(0.2, () => len(1, text())), // the last entity name wins
    );
    shuffle(parts);
  }
  return parts.flat();
}

function request(entities: number, edgy: boolean): Uint8Array {
  const fields: number[][] = [len(2, utf8('fuzz_legacy')), len(3, utf8(`t${int(100)}`))];
  for (let i = 0; i < entities; i++) fields.push(len(1, entity(edgy)));
  if (edgy) {
    fields.push(maybe(0.4, unknownField));
    shuffle(fields);
  }
  return Uint8Array.from(fields.flat());
}

const live = { signal: new AbortController().signal, deadline: Number.POSITIVE_INFINITY };

function generatedRowByRow(message: Uint8Array): Promise<OrchestratorRequestProto> {
  return decodeInSlices(message, {
    decode: (rest) => OrchestratorRequestProto.decode(rest),
    repeated: [{ field: 1, property: 'entities', decode: (b: Uint8Array) => Entity.decode(b) }],
    ...live,
  });
}

async function settle<T>(run: () => T | Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await run() };
  } catch (error) {
    return { error: error ?? new Error('thrown') };
  }
}

async function assertSameAsGenerated(message: Uint8Array, label: string, wellFormed = true): Promise<void> {
  const expected = await settle(() => generatedRowByRow(message));
  const sliced = await settle(() => decodeLegacyInSlices(message, live.signal, live.deadline));
  if (wellFormed) {
    const whole = await settle(() => OrchestratorRequestProto.decode(message));
    assert.equal(whole.error === undefined, expected.error === undefined, `${label}: whole-message decoding`);
    if (whole.value)
      assert.deepEqual(whole.value, expected.value, `${label}: whole-message decoding differs`);
  }
  if (expected.error !== undefined) {
    assert.ok(sliced.error !== undefined, `${label}: the generated decoder throws (${expected.error})`);
    return;
  }
  assert.equal(sliced.error, undefined, `${label}: threw, the generated decoder did not`);
  assert.deepEqual(sliced.value, expected.value, label);
}

describe('sliced entity decoding equals the generated decoder', () => {
  test('seeded random requests with unknown fields, groups, wrong wire types, any field order', async () => {
    reseed(3);
    for (let i = 0; i < 400; i++) await assertSameAsGenerated(request(int(5), i % 3 !== 0), `random #${i}`);
  });

  test('edge cases: empty, defaults, a tag 0 or end-group inside a feature, lengths past the entity', async () => {
    const cases: [string, number[], boolean][] = [
      ['empty message', [], true],
      ['empty entity', len(1, []), true],
      ['empty feature', len(1, len(3, [])), true],
      [
        'tag 0 ends a feature, the entity reads on',
        len(1, len(3, [...len(1, utf8('f')), 0, ...len(2, utf8('v'))])),
        true,
      ],
      [
        'end-group ends a feature',
        len(1, [...len(3, [...len(1, utf8('f')), ...key(5, 4)]), ...len(2, utf8('i'))]),
        true,
      ],
      ['tag 0 ends an entity', len(1, [...len(2, utf8('a')), 0, ...len(2, utf8('b'))]), false],
      ['feature length past the entity', len(1, [...key(3, 2), 50, ...len(1, utf8('f'))]), false],
      [
        'feature length past its entity, into the next field',
        [...len(1, [...key(3, 2), 3]), 10, 1, 65],
        false,
      ],
      ['invalid UTF-8 id', len(1, len(2, [0xff, 0xc3, 0x28])), true],
      ['bad wire type 6', len(1, [...key(2, 6), 1]), true],
      ['overlong varint', len(1, [...key(4, 0), ...Array(10).fill(0xff), 1]), true],
      ['truncated id', len(1, [...key(2, 2), 5, 65]), true],
    ];
    for (const [label, bytes, wellFormed] of cases)
      await assertSameAsGenerated(Uint8Array.from(bytes), label, wellFormed);
  });

  test('truncated and corrupted messages throw where the generated decoder throws', async () => {
    reseed(5);
    for (let i = 0; i < 300; i++) {
      const whole = request(1 + int(3), true);
      await assertSameAsGenerated(whole.subarray(0, int(whole.length)), `truncated #${i}`, false);
      const flipped = Uint8Array.from(whole);
      for (let k = 0; k < 3; k++) flipped[int(flipped.length)] = int(256);
      await assertSameAsGenerated(flipped, `corrupted #${i}`, false);
    }
  });

  test('the largest accepted entity (100,000 ids and a 100,000-value feature) is decoded across slices', async () => {
    const ids = Array.from({ length: 100_000 }, (_, i) => `catalog-${i}${i % 7 === 0 ? 'ü' : ''}`);
    const message = OrchestratorRequestProto.encode({
      modelConfigId: 'fuzz_legacy',
      trackingId: 't',
      entities: [
        {
          entity: 'catalog_id',
          ids,
          features: [{ name: 'note', idsFeatureValue: ids.map((id) => `n-${id}`) }],
        },
        { entity: 'user_id', ids: ['u1'], features: [] },
      ],
    }).finish();
    let turns = 0;
    const counting = setInterval(() => turns++, 0);
    await assertSameAsGenerated(message, 'largest');
    clearInterval(counting);
    // Other work ran while it decoded (the generated decoder holds the event loop throughout).
    assert.ok(turns > 0, 'the event loop turned during decoding');
  });

  test('the pre-check of a large entity runs in slices too, and rejects as the one-go pre-check does', async () => {
    const ids = Array.from({ length: 100_000 }, (_, i) => `catalog-${i}`);
    const good = OrchestratorRequestProto.encode({
      modelConfigId: 'fuzz_legacy',
      trackingId: 't',
      entities: [{ entity: 'catalog_id', ids, features: [{ name: 'note', idsFeatureValue: ['x'] }] }],
    }).finish();
    // The last id made invalid UTF-8 in place: "catalog-99999" becomes "catalog-9999\xff".
    const bad = Buffer.from(good);
    const at = bad.lastIndexOf(Buffer.from('catalog-99999')) + 12;
    bad[at] = 0xff;
    const rejection = (run: () => unknown) => {
      try {
        run();
      } catch (err) {
        return err;
      }
      return undefined;
    };
    const expected = rejection(() => precheckLegacy(bad));
    assert.ok(isLatticeError(expected, 'INVALID_ARGUMENT') && expected.field === 'entities[0].ids[99999]');
    let turns = 0;
    const counting = setInterval(() => turns++, 0);
    await assert.rejects(
      legacyDecoding.requestDecodeSliced(bad, live.signal, live.deadline),
      (err: unknown) => {
        assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
        assert.equal(err.message, (expected as Error).message);
        assert.equal(err.field, 'entities[0].ids[99999]');
        return true;
      },
    );
    clearInterval(counting);
    assert.ok(turns > 0, 'the event loop turned during the pre-check');
    const decoded = await legacyDecoding.requestDecodeSliced(Buffer.from(good), live.signal, live.deadline);
    assert.deepEqual(decoded, OrchestratorRequestProto.decode(good));
  });
});
