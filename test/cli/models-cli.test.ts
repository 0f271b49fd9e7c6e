/**
 * `lattice models`: every model config of a file config store with its validation state (valid, a
 * schema or DAG error with its problems, a document that does not parse), its version and when it
 * changed, as a table and as --json; and a config store that cannot be reached (etcd down) failing
 * with exit 1 and what to do. `lattice models` beside a running `lattice up` is in lattice-up.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { catalogRankerConfig } from '../../examples/catalog-ranker.js';
import type { ModelConfigState } from '../../src/cli/commands/models.js';
import { RevisionHistory } from '../../src/orchestrator/console/index.js';
import { createConfigStore } from '../../src/platform/config-store/index.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { runCaptured } from '../support/cli-capture.js';
import { latticeBin } from '../support/lattice-up-process.js';

/** An ops URL nothing listens on: no running orchestrator answers there. */
const NOBODY = 'http://127.0.0.1:1';

/** A file config store with four model documents and one that is not a model, plus its settings file. */
function configStore(): { settings: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-models-cli-'));
  const models = join(dir, 'config', 'models');
  mkdirSync(join(models, 'nested'), { recursive: true });
  const ranker = catalogRankerConfig({ modelServer: '127.0.0.1:1', computeServer: '127.0.0.1:1' });
  writeFileSync(join(models, 'catalog_ranker.json'), JSON.stringify(ranker));
  // Valid JSON, but a dependency on a component nobody defines.
  writeFileSync(
    join(models, 'broken.json'),
    JSON.stringify({
      ...ranker,
      model_config_id: 'broken',
      component_dependency: { ...ranker.component_dependency, ghost: [] },
    }),
  );
  writeFileSync(join(models, 'unparsable.yaml'), 'model_config_id: [unclosed\n');
  writeFileSync(join(models, 'nested', 'not_a_model.json'), '{}');
  // A known modification time, for CHANGED.
  const changed = new Date('2024-06-01T12:00:00.000Z');
  utimesSync(join(models, 'catalog_ranker.json'), changed, changed);
  const settings = join(dir, 'settings.json');
  writeFileSync(
    settings,
    JSON.stringify({ dataDir: dir, configStore: { kind: 'file', dir: join(dir, 'config') } }),
  );
  return { settings, dir };
}

describe('lattice models', () => {
  test('a table of every model config: valid, or INVALID with the reason, and when it changed', async () => {
    const { settings } = configStore();
    // No orchestrator runs: LOADED is unknown, and the last line says why and what to do.
    const result = await runCaptured(['models', '--settings', settings, '--address', NOBODY]);
    assert.equal(result.exitCode, 0, result.err);
    const lines = result.out.split('\n');
    assert.match(lines[0]!, /^MODEL\s+STATE\s+CHANGED\s+LOADED\s+ERROR$/);
    assert.match(
      lines[1]!,
      /^broken\s+INVALID\s+\S+Z\s+\?\s+invalid model config broken: component_dependency\.ghost: no component named "ghost"/,
    );
    assert.match(lines[2]!, /^catalog_ranker\s+valid\s+2024-06-01T12:00:00\.000Z\s+\?\s+-$/);
    assert.match(lines[3]!, /^unparsable\s+INVALID\s+\S+Z\s+\?\s+.*unparsable\.yaml/);
    assert.match(
      lines[4]!,
      /^3 model config\(s\) in directory .*, 2 invalid\. A running orchestrator reloads/,
    );
    assert.match(
      lines[5]!,
      /^LOADED is unknown: no orchestrator answered at http:\/\/127\.0\.0\.1:1\/models .*--address/,
    );
    assert.equal(lines.length, 6, result.out);
  });

  test('--json for scripts, from the lattice binary: the problems of an invalid config with their paths', () => {
    const { settings } = configStore();
    const result = spawnSync(process.execPath, [latticeBin, 'models', '--json', '--address', NOBODY], {
      env: { ...process.env, LATTICE_SETTINGS_FILE: settings },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(result.status, 0, result.stderr);
    const states = JSON.parse(result.stdout) as ModelConfigState[];
    assert.deepEqual(
      states.map((s) => [s.model_config_id, s.key, s.valid]),
      [
        ['broken', 'models/broken', false],
        ['catalog_ranker', 'models/catalog_ranker', true],
        ['unparsable', 'models/unparsable', false],
      ],
    );
    const [broken, ranker, unparsable] = states;
    assert.equal(typeof ranker!.revision, 'number');
    assert.equal(ranker!.changed_at, '2024-06-01T12:00:00.000Z');
    assert.match(ranker!.file!, /config\/models\/catalog_ranker\.json$/);
    assert.equal(ranker!.error, undefined);
    assert.equal(ranker!.serving, undefined, 'no orchestrator answered');
    assert.ok(
      broken!.problems?.some((p) => p.path === 'component_dependency.ghost'),
      JSON.stringify(broken!.problems),
    );
    assert.match(broken!.error!, /invalid model config broken:/);
    assert.equal(unparsable!.problems, undefined);
    assert.match(unparsable!.error!, /unparsable\.yaml/);
  });

  test('an empty store says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-models-empty-'));
    const settings = join(dir, 'settings.json');
    writeFileSync(settings, JSON.stringify({ dataDir: dir }));
    const result = await runCaptured(['models', '--settings', settings]);
    assert.equal(result.exitCode, 0, result.err);
    assert.match(result.out, /^No model configs under models\/ in directory .*config\.$/);
    assert.equal((await runCaptured(['models', '--settings', settings, '--json'])).out, '[]');
  });

  test('a config store that is down: exit 1, naming it and what to do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-models-down-'));
    const settings = join(dir, 'settings.json');
    writeFileSync(
      settings,
      JSON.stringify({
        dataDir: dir,
        configStore: { kind: 'etcd', endpoints: ['http://127.0.0.1:1'], dialTimeoutMs: 500 },
      }),
    );
    await assert.rejects(
      runCaptured(['models', '--settings', settings]),
      (err) =>
        isLatticeError(err, 'UNAVAILABLE') &&
        /cannot read the model configs from etcd http:\/\/127\.0\.0\.1:1: .*start etcd at http:\/\/127\.0\.0\.1:1/.test(
          err.message,
        ),
    );
    const result = spawnSync(process.execPath, [latticeBin, 'models', '--settings', settings], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /^lattice: cannot read the model configs from etcd .*LATTICE_ETCD_ENDPOINTS/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });

  test('apply writes a valid document to the store and refuses an invalid one with its problems', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-models-apply-'));
    const settings = join(dir, 'settings.json');
    writeFileSync(settings, JSON.stringify({ dataDir: dir }));
    const ranker = catalogRankerConfig({ modelServer: '127.0.0.1:1', computeServer: '127.0.0.1:1' });
    const good = join(dir, 'shop_ranker.json');
    writeFileSync(good, JSON.stringify({ ...ranker, model_config_id: 'shop_ranker' }));
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `model_config_id: bad\ncomponent_dependency: { ghost: [] }\n`);

    const dry = await runCaptured(['models', 'apply', '--dry-run', '--settings', settings, good]);
    assert.equal(dry.exitCode, 0, dry.err);
    assert.match(dry.out, /model config "shop_ranker" is valid \(not written: --dry-run\)/);
    assert.match((await runCaptured(['models', '--settings', settings])).out, /^No model configs/);

    const applied = await runCaptured([
      'models',
      'apply',
      '--settings',
      settings,
      '--comment',
      'first shop ranker',
      good,
      bad,
    ]);
    assert.equal(applied.exitCode, 1);
    assert.match(
      applied.out,
      /shop_ranker\.json: model config "shop_ranker" is valid; written to models\/shop_ranker in directory /,
    );
    assert.match(applied.err, /bad\.yaml: invalid model config bad:/);
    const states = JSON.parse(
      (await runCaptured(['models', '--settings', settings, '--json'])).out,
    ) as ModelConfigState[];
    assert.deepEqual(
      states.map((m) => [m.model_config_id, m.valid]),
      [['shop_ranker', true]],
      'only the valid document was written',
    );
    // Recorded in the revision history the console shows, with the OS user and the comment.
    const store = await createConfigStore({ kind: 'file', dir: join(dir, 'config') });
    try {
      const history = await new RevisionHistory(store).list('shop_ranker');
      assert.deepEqual(
        history.map((r) => [r.revision, r.action, r.author, r.comment]),
        [[1, 'apply', userInfo().username, 'first shop ranker']],
      );
      assert.deepEqual(history[0]!.document, { ...ranker, model_config_id: 'shop_ranker' });
      assert.deepEqual(await new RevisionHistory(store).list('bad'), []);
    } finally {
      await store.close();
    }

    const missing = await runCaptured(['models', 'apply', '--settings', settings, join(dir, 'nope.json')]);
    assert.equal(missing.exitCode, 2);
  });
});
