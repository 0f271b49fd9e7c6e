import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { attributeValue, numberFromText, typedAttributes } from '../../../src/vss/model/index.js';

describe('attribute values: text that reads as a number is a number', () => {
  test('JSON-number text is a number', () => {
    for (const [text, value] of [
      ['0', 0],
      ['12', 12],
      ['-3.5', -3.5],
      ['0.25', 0.25],
      ['12.50', 12.5],
      ['1e3', 1000],
      ['-0', 0],
      ['9007199254740991', 9007199254740991],
    ] as const) {
      assert.equal(numberFromText(text), value, text);
    }
  });

  test('anything else stays text', () => {
    for (const text of ['', ' 7', '7 ', '+5', '012', '.5', '5.', '0x1f', 'Infinity', 'NaN', '1e999', '12a']) {
      assert.equal(numberFromText(text), undefined, JSON.stringify(text));
    }
    // Whole numbers past 2^53 are ids a double would round.
    assert.equal(numberFromText('9007199254740993'), undefined);
    assert.equal(attributeValue('12345678901234567890'), '12345678901234567890');
  });

  test('payload values: only text changes type', () => {
    assert.deepEqual(typedAttributes({ price: '9.99', brand: 'acme', n: 3, ok: true, tags: ['1', 'a'] }), {
      price: 9.99,
      brand: 'acme',
      n: 3,
      ok: true,
      tags: ['1', 'a'],
    });
  });
});
