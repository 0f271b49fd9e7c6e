/**
 * The `lattice` command line: one commander program with a subcommand per command (each declared in
 * commands/<name>.command.ts). Building the tree imports no command's module: each is imported when
 * its command runs, so `lattice --help` stays fast (importing every adapter and server up front cost
 * ~0.7 s and ~110 MB, compiled).
 *
 * Exit statuses: 0 done (and --help, --version), 1 the command failed (main.ts prints why), 2 bad usage (an
 * unknown command or option, a missing or malformed value: the message, then the command's help, on
 * stderr). A command's runner may choose another status (a vss admin operation that FAILED: 1).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { packageRoot } from '../platform/package-root.js';
import { type CliIo, type CliSession, settingsOption } from './command-kit.js';
import { defineCheck } from './commands/check.command.js';
import { defineCompute } from './commands/compute.command.js';
import { defineFeatureStore } from './commands/featurestore.command.js';
import { defineLogs } from './commands/logs.command.js';
import { defineModels } from './commands/models.command.js';
import { defineModelServer } from './commands/modelserver.command.js';
import { defineOrchestrator } from './commands/orchestrator.command.js';
import { definePredict } from './commands/predict.command.js';
import { defineSearch } from './commands/search.command.js';
import { defineSettings } from './commands/settings.command.js';
import { defineUp } from './commands/up.command.js';
import { defineVss } from './commands/vss.command.js';

/** The process's streams and Ctrl-C. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    onInterrupt(handler) {
      // Listening to SIGINT keeps Node from exiting on Ctrl-C: only while an operation is waited on.
      process.once('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
  };
}

/** The version of the installed package: its package.json's, as npm shows it. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The whole command tree; its actions write to `session.io` and set `session.exitCode`. */
export function createProgram(session: CliSession): Command {
  const { io } = session;
  const program = new Command('lattice')
    .usage('<command> [options]')
    .description('lattice — the Lattice ML serving platform')
    .version(packageVersion(), '-V, --version', 'print the version of lattice')
    // Options after a command name belong to that command (`vss serving --port` is serving's).
    .enablePositionalOptions()
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(`lattice: ${text.replace(/^error: /, '')}`),
      getOutHelpWidth: () => (io.stdout.isTTY && io.stdout.columns ? io.stdout.columns : 100),
      getErrHelpWidth: () => (io.stderr.isTTY && io.stderr.columns ? io.stderr.columns : 100),
    })
    .addOption(settingsOption())
    .addHelpText(
      'after',
      '\nConfiguration is read from LATTICE_* environment variables and the settings file; see docs/configuration.md.\n' +
        '"lattice <command> --help" (or "lattice help <command>") shows a command\'s own usage.',
    );
  defineUp(program, session);
  defineCheck(program, session);
  defineCompute(program, session);
  defineFeatureStore(program, session);
  defineLogs(program, session);
  defineModels(program, session);
  defineModelServer(program, session);
  defineOrchestrator(program, session);
  defineVss(program, session);
  definePredict(program, session);
  defineSearch(program, session);
  defineSettings(program, session);
  return program;
}

/**
 * Runs one command line (the arguments after `lattice`) and resolves to its exit status. A failure
 * of the command itself rejects, with the error to report (exit status 1).
 */
export async function runLattice(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const session: CliSession = { io, exitCode: 0 };
  const program = createProgram(session);
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    // Help asked for (--help, `help <command>`) is a success; every other parser error is bad usage.
    const help = err.code === 'commander.helpDisplayed' || err.code === 'commander.version';
    return help || (err.code === 'commander.help' && err.exitCode === 0) ? 0 : 2;
  }
  return session.exitCode;
}
