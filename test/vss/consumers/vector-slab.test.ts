import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VectorSlab } from '../../../src/vss/consumers/vector-slab.js';

describe('VectorSlab', () => {
  it('hands out zeroed vectors that never share values, across buffers', () => {
    const slab = new VectorSlab();
    const vectors = Array.from({ length: 300 }, (_, i) => {
      const vector = slab.take(128);
      assert.equal(vector.length, 128);
      assert.ok(vector.every((x) => x === 0));
      vector.fill(i);
      return vector;
    });
    for (const [i, vector] of vectors.entries()) {
      assert.ok(
        vector.every((x) => x === i),
        `vector ${i} kept its values`,
      );
    }
    assert.ok(new Set(vectors.map((v) => v.buffer)).size > 1, 'more than one buffer');
  });

  it('takes back the last vector refused while filled, zeroed, and ignores any other', () => {
    const slab = new VectorSlab();
    const kept = slab.take(4);
    kept.fill(1);
    const refused = slab.take(4);
    refused.fill(2);
    slab.giveBack(kept); // not the last: ignored
    slab.giveBack(refused);
    const next = slab.take(4);
    assert.equal(next.byteOffset, refused.byteOffset);
    assert.deepEqual([...next], [0, 0, 0, 0]);
    assert.deepEqual([...kept], [1, 1, 1, 1]);
  });

  it('gives long vectors a buffer of their own', () => {
    const slab = new VectorSlab();
    const long = slab.take(10_000);
    assert.equal(long.length, 10_000);
    assert.equal(long.byteOffset, 0);
    assert.equal(long.buffer.byteLength, 40_000);
  });
});
