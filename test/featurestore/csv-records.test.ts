import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CsvParser, type CsvRecord, readCsvFile } from '../../src/featurestore/csv-records.js';
import { readLines } from '../../src/featurestore/line-records.js';

function parseAll(text: string, chunk = text.length, delimiter = ','): CsvRecord[] {
  const parser = new CsvParser(delimiter);
  const out: CsvRecord[] = [];
  for (let i = 0; i < text.length; i += Math.max(1, chunk))
    out.push(...parser.push(text.slice(i, i + chunk)));
  out.push(...parser.end());
  return out;
}

const sample =
  '\uFEFFid,name,vec\r\n' +
  '1,plain,"1,2"\r\n' +
  '\r\n' +
  '2,"say ""hi""","a\nb"\n' +
  '3,"",\n' +
  '4,it"s,x\r' +
  '5,"multi\r\nline\nvalue",z\n' +
  '6,last,row';

const expected: CsvRecord[] = [
  { line: 1, fields: ['id', 'name', 'vec'] },
  { line: 2, fields: ['1', 'plain', '1,2'] },
  { line: 4, fields: ['2', 'say "hi"', 'a\nb'] },
  { line: 6, fields: ['3', '', ''] },
  { line: 7, fields: ['4', 'it"s', 'x'] },
  { line: 8, fields: ['5', 'multi\r\nline\nvalue', 'z'] },
  { line: 11, fields: ['6', 'last', 'row'] },
];

describe('CSV records', () => {
  test('RFC 4180: quotes, escaped quotes, embedded newlines, CRLF/CR/LF, BOM, blank lines; start lines', () => {
    assert.deepEqual(parseAll(sample), expected);
  });

  test('the same records whatever the chunk boundaries', () => {
    for (const chunk of [1, 2, 3, 5, 7, 13])
      assert.deepEqual(parseAll(sample, chunk), expected, `chunk ${chunk}`);
  });

  test('malformed records carry an error and parsing goes on', () => {
    const records = parseAll('a,b\n"x"y,1\nok,2\n"open,3\n');
    assert.equal(records[1]?.error, 'unexpected text after the closing quote of field 1');
    assert.deepEqual(records[2], { line: 3, fields: ['ok', '2'] });
    assert.equal(records[3]?.line, 4);
    assert.equal(records[3]?.error, 'unterminated quoted field 1');
  });

  test('other delimiters', () => {
    assert.deepEqual(
      parseAll('a\tb\n"x\ty"\t2\n', 4, '\t').map((r) => r.fields),
      [
        ['a', 'b'],
        ['x\ty', '2'],
      ],
    );
    assert.throws(() => new CsvParser('"'));
  });

  test('files are read in batches, multi-byte characters across chunk edges intact', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-csv-'));
    const file = join(dir, 'big.csv');
    const rows = Array.from({ length: 60_000 }, (_, i) => `${i},"ünïcødé ${i}"`);
    writeFileSync(file, `id,text\n${rows.join('\n')}\n`);
    let count = 0;
    let lastBytes = 0;
    for await (const batch of readCsvFile(file, { onBytes: (b) => (lastBytes = b) })) {
      for (const record of batch) {
        if (count > 0) assert.deepEqual(record.fields, [String(count - 1), `ünïcødé ${count - 1}`]);
        assert.equal(record.line, count + 1);
        count++;
      }
    }
    assert.equal(count, 60_001);
    assert.ok(lastBytes > 1_000_000);

    const jsonl = join(dir, 'lines.jsonl');
    writeFileSync(jsonl, '\uFEFF{"a":1}\r\n\n  \n{"a":"ü"}\n{"a":3}');
    const lines = [];
    for await (const batch of readLines(jsonl)) lines.push(...batch);
    assert.deepEqual(lines, [
      { line: 1, text: '{"a":1}' },
      { line: 4, text: '{"a":"ü"}' },
      { line: 5, text: '{"a":3}' },
    ]);
  });
});
