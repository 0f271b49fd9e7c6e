/**
 * The usage of every `lattice` command and subcommand, walked from the program itself so that a new
 * command cannot be missed: `--help` (and `-h`, and `lattice help <command>`) prints the command's own
 * usage and exits 0; an unknown option exits 2 with the message and that usage on stderr, having run
 * nothing. Also: no command, an unknown command, `--settings` before or after the command name, and
 * `lattice up help` (a usage error, not a start).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Command } from 'commander';
import { createProgram } from '../../src/cli/program.js';
import { runCaptured } from '../support/cli-capture.js';
import { latticeBin } from '../support/lattice-up-process.js';

/** Every command path of the tree: ['up'], ['vss'], ['vss', 'serving'], … */
function commandPaths(command: Command, path: string[] = []): string[][] {
  return command.commands.flatMap((sub) => {
    const at = [...path, sub.name()];
    return [at, ...commandPaths(sub, at)];
  });
}

const program = createProgram({
  io: { stdout: { write: () => true }, stderr: { write: () => true }, onInterrupt: () => () => {} },
  exitCode: 0,
});
const paths = commandPaths(program);

describe('lattice usage', () => {
  test('the tree has every command and subcommand', () => {
    const names = paths.map((path) => path.join(' '));
    for (const expected of [
      'up',
      'check',
      'compute',
      'compute put',
      'featurestore serve',
      'featurestore load',
      'logs decode',
      'models',
      'modelserver',
      'modelserver demo-models',
      'orchestrator',
      'predict',
      'search',
      'settings',
      'vss',
      'vss serving',
      'vss consumers',
      'vss admin',
      'vss replay',
      'vss register-store',
      'vss register-model',
      'vss register-variant',
      'vss update-variant',
      'vss reset',
      'vss trigger',
      'vss promote',
      'vss rollback',
      'vss retry',
      'vss status',
      'vss models',
    ]) {
      assert.ok(names.includes(expected), `${expected} in ${names.join(', ')}`);
    }
  });

  test('lattice --help, -h and no command at all print the overview on stdout, exit 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help'], []]) {
      const result = await runCaptured(argv);
      assert.equal(result.exitCode, 0, argv.join(' '));
      assert.match(result.out, /^Usage: lattice <command> \[options\]/);
      for (const [name] of paths.filter((path) => path.length === 1)) {
        assert.match(result.out, new RegExp(`^ {2}${name} `, 'm'), name);
      }
      assert.equal(result.err, '');
    }
  });

  for (const path of paths) {
    const name = path.join(' ');
    test(`lattice ${name} --help prints its own usage; an unknown option exits 2 with it`, async () => {
      const usage = new RegExp(`^Usage: lattice ${name} `);
      for (const argv of [
        [...path, '--help'],
        [...path, '-h'],
      ]) {
        const result = await runCaptured(argv);
        assert.equal(result.exitCode, 0, argv.join(' '));
        assert.match(result.out, usage, argv.join(' '));
        assert.match(result.out, /^Options:$/m);
        assert.equal(result.err, '');
      }
      const bad = await runCaptured([...path, '--no-such-option']);
      assert.equal(bad.exitCode, 2, bad.err);
      // A command with required options or arguments may name those first; either way it is usage.
      assert.match(
        bad.err,
        /^lattice: (unknown option '--no-such-option'|required option '.*' not specified|missing required argument)/,
      );
      assert.match(bad.err, new RegExp(`\\n\\nUsage: lattice ${name} `));
      assert.equal(bad.out, '', 'nothing ran');
    });
  }

  test('lattice help <command> is the command’s --help', async () => {
    for (const [name] of paths.filter((path) => path.length === 1)) {
      const help = await runCaptured(['help', name!]);
      const flag = await runCaptured([name!, '--help']);
      assert.equal(help.exitCode, 0, name);
      assert.equal(help.out, flag.out, name);
    }
    const sub = await runCaptured(['vss', 'help', 'reset']);
    assert.equal(sub.exitCode, 0);
    assert.match(sub.out, /^Usage: lattice vss reset /);
  });

  test('an unknown command, a missing subcommand, a stray word, a misplaced option: exit 2 with the usage', async () => {
    const unknown = await runCaptured(['frobnicate']);
    assert.equal(unknown.exitCode, 2);
    assert.match(unknown.err, /^lattice: unknown command 'frobnicate'\n\nUsage: lattice <command>/);
    const nested = await runCaptured(['featurestore', 'frobnicate']);
    assert.equal(nested.exitCode, 2);
    assert.match(nested.err, /^lattice: unknown command 'frobnicate'/);
    for (const group of ['featurestore', 'logs']) {
      const bare = await runCaptured([group]);
      assert.equal(bare.exitCode, 2, group);
      assert.match(bare.err, new RegExp(`^Usage: lattice ${group} `), group);
    }
    const stray = await runCaptured(['settings', 'now']);
    assert.equal(stray.exitCode, 2);
    assert.match(stray.err, /^lattice: too many arguments for 'settings'/);
    const misplaced = await runCaptured(['vss', '--port', '1', 'serving']);
    assert.equal(misplaced.exitCode, 2);
    assert.match(
      misplaced.err,
      /^lattice: --port is an option of 'vss' itself: give the options of 'serving' after its name/,
    );
    const value = await runCaptured(['orchestrator', '--port', 'http']);
    assert.equal(value.exitCode, 2);
    assert.match(
      value.err,
      /^lattice: option '--port <N>' argument 'http' is invalid\. It must be a port number/,
    );
  });

  test('--settings FILE works before and after the command name (the one nearest the command wins)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-usage-'));
    const file = (name: string, dataDir: string) => {
      const path = join(dir, name);
      writeFileSync(path, JSON.stringify({ dataDir }));
      return path;
    };
    const outer = file('outer.json', join(dir, 'outer-data'));
    const inner = file('inner.json', join(dir, 'inner-data'));
    const dataDirOf = async (argv: string[]) => {
      const result = await runCaptured(argv);
      assert.equal(result.exitCode, 0, result.err);
      return (
        JSON.parse(result.out.slice(0, result.out.indexOf('\nEnvironment variables:'))) as { dataDir: string }
      ).dataDir;
    };
    assert.equal(await dataDirOf(['--settings', outer, 'settings']), join(dir, 'outer-data'));
    assert.equal(await dataDirOf(['settings', '--settings', inner]), join(dir, 'inner-data'));
    assert.equal(
      await dataDirOf(['--settings', outer, 'settings', '--settings', inner]),
      join(dir, 'inner-data'),
    );
  });

  test('the lattice binary: --help exits 0 on stdout; `lattice up help` is a usage error and starts nothing', () => {
    const help = spawnSync(process.execPath, [latticeBin, '--help'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: lattice <command> \[options\]/);
    const up = spawnSync(process.execPath, [latticeBin, 'up', 'help'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(up.status, 2, up.stderr);
    assert.equal(up.stdout, '');
    assert.match(up.stderr, /^lattice: too many arguments for 'up'[\s\S]*Usage: lattice up /);
  });
});
