/**
 * The vss admin walkthrough of docs/vss.md, run as written: the shell blocks marked
 * `<!-- walkthrough: vss-admin -->` and `<!-- walkthrough: vss-admin-curl -->` run with bash in a
 * fresh directory, against `lattice vss` started as the page says (on a free admin port, given to
 * both through LATTICE_VSS_ADMIN_PORT, as a user would set it). `npx lattice` resolves to this
 * clone's bin/lattice.js, as it does inside the clone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startLatticeVss } from '../support/lattice-vss-process.js';
import { npxShim } from '../support/npx-shim.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The first ```sh block after `<!-- walkthrough: name -->`. */
function walkthroughBlock(page: string, name: string): string {
  const marker = page.indexOf(`<!-- walkthrough: ${name} -->`);
  assert.ok(marker >= 0, `docs/vss.md has no walkthrough "${name}"`);
  const block = /```sh\n([\s\S]*?)```/.exec(page.slice(marker));
  assert.ok(block, `walkthrough "${name}" has no sh block`);
  return block[1]!;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

test('the vss admin walkthrough of docs/vss.md runs as written', { timeout: 300_000 }, async () => {
  const page = readFileSync(join(root, 'docs/vss.md'), 'utf8');
  const dir = mkdtempSync(join(tmpdir(), 'lattice-walkthrough-'));
  const shims = npxShim(dir);
  const port = String(await freePort());
  const env = {
    LATTICE_DATA_DIR: join(dir, '.lattice'),
    LATTICE_VSS_ADMIN_PORT: port,
  };
  const vss = await startLatticeVss({ command: 'vss', env });
  try {
    const run = (name: string) => {
      const result = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', walkthroughBlock(page, name)], {
        cwd: dir,
        env: { ...process.env, ...env, PATH: `${shims}:${process.env.PATH}` },
        encoding: 'utf8',
        timeout: 240_000,
      });
      assert.equal(result.status, 0, `walkthrough ${name} failed:\n${result.stdout}\n${result.stderr}`);
      return result.stdout;
    };
    const cli = run('vss-admin');
    assert.match(cli, /Store 1 registered for entity catalog/);
    assert.match(cli, /RESET_MODEL\) SUCCEEDED/);
    assert.match(cli, /DELTA_MODEL\) SUCCEEDED/);
    assert.match(cli, /catalog\s+products\s+all\s+READY\s+experiment\s+1\s+1/);
    assert.match(cli, /catalog\s+products\s+shoes\s+READY\s+experiment\s+1\s+1/);
    const curl = run('vss-admin-curl');
    assert.match(curl, /"operation_id":"[^"]+"/);
    assert.match(curl, /"version":2/);
    const openapi = JSON.parse(readFileSync(join(dir, 'openapi.json'), 'utf8')) as { openapi: string };
    assert.match(openapi.openapi, /^3\./);
  } finally {
    const code = await vss.stop();
    rmSync(dir, { recursive: true, force: true });
    assert.equal(code, 0, vss.output());
  }
});
