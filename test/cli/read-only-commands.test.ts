/**
 * `lattice models` and `lattice check` only read. Run by the binary in an empty directory, with the
 * default (embedded) settings and nothing running, they answer and leave the directory empty: no
 * data directory, no lock, no database opened (check looks at an embedded adapter's data directory
 * instead of opening it). Beside an existing data directory nobody holds, check says so and changes
 * nothing in it; a data directory that cannot serve is a failed port. How fast they answer is a
 * benchmark matter, not asserted here: what made them slow (opening PGlite, importing every adapter)
 * is what these runs show is gone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { closedPort } from '../support/closed-port.js';
import { latticeBin } from '../support/lattice-up-process.js';

/** Runs the binary in `cwd` with the default settings: no LATTICE_* but the ops port, where nothing listens. */
function lattice(args: string[], cwd: string, env: Record<string, string> = {}) {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('LATTICE_')),
  );
  return spawnSync(process.execPath, [latticeBin, ...args], {
    cwd,
    env: { ...inherited, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

/** Every file and directory under `dir`, with its size and modification time. */
function snapshot(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => {
      const stat = statSync(join(dir, name));
      return `${relative(dir, join(dir, name))} ${stat.size} ${stat.mtimeMs}`;
    })
    .sort();
}

describe('read-only commands with nothing running', () => {
  test('lattice models and lattice check in an empty directory: they answer, exit 0, create nothing', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lattice-read-only-'));
    const env = { LATTICE_METRICS_PORT: String(await closedPort()) };

    const models = lattice(['models'], cwd, env);
    assert.equal(models.status, 0, models.stderr);
    assert.equal(
      models.stdout,
      `No model configs under models/ in directory ${join(cwd, '.lattice', 'config')}.\n`,
    );
    assert.equal(models.stderr, '');
    assert.deepEqual(readdirSync(cwd), []);

    const check = lattice(['check'], cwd, env);
    assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);
    const lines = check.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => line.split(/\s+/).slice(0, 2).join(' ')),
      ['ok configStore', 'ok queue', 'ok sql', 'ok cache', 'ok vectorDb'],
    );
    for (const [line, dir] of [
      [lines[1], 'queue'],
      [lines[2], 'sql'],
      [lines[4], 'vectordb'],
    ] as const) {
      assert.ok(
        line!.endsWith(`${join(cwd, '.lattice', dir)} (not created yet: the first start creates it)`),
        line,
      );
    }
    assert.equal(check.stderr, '');
    assert.deepEqual(readdirSync(cwd), [], 'lattice check created nothing');
  });

  test('lattice check beside data directories nobody holds: reported, not opened, left as they were', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lattice-read-only-'));
    for (const dir of ['sql', 'queue', 'vectordb'])
      mkdirSync(join(cwd, '.lattice', dir), { recursive: true });
    writeFileSync(join(cwd, '.lattice', 'sql', 'PG_VERSION'), '17\n');
    // A lock left by a process that is gone does not hold the directory.
    writeFileSync(join(cwd, '.lattice', 'sql.lock'), JSON.stringify({ pid: 2 ** 22 + 1 }));
    const before = snapshot(cwd);

    const check = lattice(['check', '--json'], cwd, { LATTICE_METRICS_PORT: String(await closedPort()) });
    assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);
    const results = JSON.parse(check.stdout) as { port: string; ok: boolean; note?: string }[];
    assert.deepEqual(
      results.map((r) => [r.port, r.ok, r.note]),
      [
        ['configStore', true, undefined],
        ['queue', true, 'no process holds it; not opened'],
        ['sql', true, 'no process holds it; not opened'],
        ['cache', true, undefined],
        ['vectorDb', true, 'no process holds it; not opened'],
      ],
    );
    assert.deepEqual(snapshot(cwd), before, 'nothing was created or changed');
  });

  test('a data directory that cannot serve fails its port, exit 1, naming why', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lattice-read-only-'));
    writeFileSync(join(cwd, 'not-a-directory'), '');
    const check = lattice(['check'], cwd, {
      LATTICE_METRICS_PORT: String(await closedPort()),
      LATTICE_SQL_DATA_DIR: join(cwd, 'not-a-directory'),
      LATTICE_VSS_VECTOR_DB_DIR: join(cwd, 'not-a-directory', 'vectordb'),
    });
    assert.equal(check.status, 1, `${check.stdout}${check.stderr}`);
    const lines = check.stdout.trimEnd().split('\n');
    assert.match(
      lines[2]!,
      /^FAILED {2}sql {10}PGlite .*not-a-directory: .*not-a-directory is not a directory$/,
    );
    assert.match(
      lines[4]!,
      /^FAILED {2}vectorDb {5}embedded, .*: .*vectordb does not exist and cannot be created \(.*not-a-directory is not a directory\)$/,
    );
    assert.deepEqual(readdirSync(cwd), ['not-a-directory']);
  });
});
