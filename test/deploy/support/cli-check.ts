/**
 * Whether `lattice <argv>` is a command line the CLI accepts, found by running it the way the image
 * does (bin/lattice.js) with a poisoned setting: every command parses its command line before it
 * loads the settings, so a known command with known options stops at the settings error (naming
 * LATTICE_LOG_LEVEL), while an unknown command, subcommand or option stops earlier with its own
 * message. Nothing starts either way, and no port is bound.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './deploy-files.js';

export interface CliVerdict {
  accepted: boolean;
  /** What it printed, for the failure message. */
  output: string;
}

const POISON = 'not-a-log-level';

export async function cliAccepts(argv: readonly string[]): Promise<CliVerdict> {
  const cwd = mkdtempSync(join(tmpdir(), 'lattice-deploy-cli-'));
  // Only the poisoned setting: the test's own LATTICE_* variables must not decide the outcome.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('LATTICE_')),
  );
  try {
    const child = spawn(process.execPath, [join(root, 'bin/lattice.js'), ...argv], {
      cwd,
      env: { ...env, LATTICE_LOG_LEVEL: POISON },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    const settingsError = /LATTICE_LOG_LEVEL/.test(output) && output.includes('logLevel');
    return { accepted: code !== 0 && settingsError, output: output.slice(0, 2000) };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}
