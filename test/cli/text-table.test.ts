import assert from 'node:assert/strict';
import { test } from 'node:test';
import { textTable } from '../../src/cli/text-table.js';

test('columns padded to their widest cell, two spaces apart, no trailing spaces', () => {
  assert.equal(
    textTable([
      ['ID', 'SCORE', 'ERROR'],
      ['p1234', '0.9', '-'],
      ['p9', '0.8751', ''],
    ]),
    ['ID     SCORE   ERROR', 'p1234  0.9     -', 'p9     0.8751'].join('\n'),
  );
  assert.equal(textTable([]), '');
});
