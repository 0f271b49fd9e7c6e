/**
 * The console's budget: what a page loads (its JavaScript and CSS, gzipped) stays under 500 KB, as
 * issue 39 asks. scripts/build-console.mjs measures it at build time into dist/console/size.json;
 * `npm test` builds first. Swagger UI's files (the /docs page) are not part of the console's bundle.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SIZE = fileURLToPath(new URL('../../dist/console/size.json', import.meta.url));
const BUDGET_BYTES = 500 * 1024;

test('the console bundle is under 500 KB gzipped', (t) => {
  if (!existsSync(SIZE)) {
    const reason = 'dist/console is not built (npm run build)';
    if (process.env.CI) assert.fail(`${reason}; CI builds it before the tests`);
    t.skip(reason);
    return;
  }
  const { gzipped_bytes: gzipped, files } = JSON.parse(readFileSync(SIZE, 'utf8')) as {
    gzipped_bytes: number;
    files: string[];
  };
  t.diagnostic(`console bundle: ${(gzipped / 1024).toFixed(1)} KB gzipped (${files.join(', ')})`);
  assert.deepEqual([...files].sort(), ['assets/app.css', 'assets/app.js']);
  assert.ok(gzipped > 0 && gzipped < BUDGET_BYTES, `${gzipped} bytes`);
});
