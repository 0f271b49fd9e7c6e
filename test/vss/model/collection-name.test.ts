import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/index.js';
import { collectionName } from '../../../src/vss/model/index.js';

/** What both vector databases accept (the port's validation; Qdrant allows a superset). */
const VALID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/;

/** Every string over `alphabet` of length 1 to `max`. */
function strings(alphabet: readonly string[], max: number): string[] {
  const out: string[] = [];
  let level = [''];
  for (let length = 1; length <= max; length++) {
    level = level.flatMap((prefix) => alphabet.map((c) => prefix + c));
    out.push(...level);
  }
  return out;
}

describe('collectionName', () => {
  test('entity x__y + model z and entity x + model y__z get different collections', () => {
    const a = collectionName('x__y', 'z', 1);
    const b = collectionName('x', 'y__z', 1);
    assert.notEqual(a, b);
    assert.equal(a, '_4_x__y__z__v1');
    assert.equal(b, '_1_x__y__z__v1');
    // Nor does a name holding `__v<n>` collide with a version.
    assert.notEqual(collectionName('e', 'm__v1', 2), collectionName('e__m', 'v1', 2));
  });

  test('names without "__" keep the name existing collections were created under', () => {
    assert.equal(collectionName('catalog', 'clip', 3), 'catalog__clip__v3');
    assert.equal(collectionName('user_id', 'clip-vit.b32', 12), 'user_id__clip-vit.b32__v12');
    assert.equal(collectionName('item_', 'm_', 1), 'item___m___v1');
    assert.equal(collectionName('A1', 'v2', 0), 'A1__v2__v0');
  });

  test('injective over every short name made of "_", "v", "1" and "a", for several versions', () => {
    const parts = strings(['a', '_', 'v', '1'], 4);
    const seen = new Map<string, string>();
    for (const entity of parts) {
      for (const model of parts) {
        for (const version of [1, 2, 11]) {
          const name = collectionName(entity, model, version);
          const triple = JSON.stringify([entity, model, version]);
          const other = seen.get(name);
          assert.equal(other, undefined, `${triple} and ${other} both map to ${name}`);
          seen.set(name, triple);
          assert.match(name, VALID);
        }
      }
    }
    assert.equal(seen.size, parts.length * parts.length * 3);
  });

  test('long names are cut and hashed: valid, distinct, stable', () => {
    const entity = `e${'x'.repeat(127)}`;
    const model = `m${'y'.repeat(127)}`;
    const a = collectionName(entity, model, 7);
    const b = collectionName(entity, `${model.slice(0, -1)}z`, 7);
    const c = collectionName(`${entity.slice(0, 100)}__${'x'.repeat(26)}`, model, 7);
    for (const name of [a, b, c]) {
      assert.match(name, VALID);
      assert.match(name, /^_h[0-9a-f]{32}__e/);
      assert.match(name, /__v7$/);
    }
    assert.equal(new Set([a, b, c]).size, 3);
    assert.equal(collectionName(entity, model, 7), a);
    assert.notEqual(collectionName(entity, model, 8), a);
  });

  test('the embedded vector database stores and reloads collections under every form of name', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-collection-names-'));
    const names = [
      collectionName('catalog', 'clip', 1),
      collectionName('x__y', 'z', 1),
      collectionName('x', 'y__z', 1),
      collectionName(`e${'x'.repeat(127)}`, `m${'y'.repeat(127)}`, 1),
    ];
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    for (const [i, name] of names.entries()) {
      await db.createCollection({ name, dimension: 2, distance: 'DOT' });
      await db.upsert(name, [{ id: `p${i}`, vector: [1, i], payload: {} }]);
    }
    await db.close();
    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => reopened.close());
    assert.deepEqual(await reopened.listCollections(), [...names].sort());
    for (const [i, name] of names.entries()) {
      assert.equal((await reopened.collectionInfo(name)).points, 1, name);
      const [point] = await reopened.getPoints(name, [`p${i}`], { withPayload: false });
      assert.equal(point?.id, `p${i}`);
    }
  });
});
