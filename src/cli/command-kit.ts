/**
 * What every command definition (src/cli/commands/*.command.ts) is made of: the context a command
 * runs with, its action (which imports the command's heavy module only when it runs), usage errors,
 * and the option-value parsers shared by several commands. It imports nothing but commander, so
 * building the whole command tree for `lattice --help` stays cheap.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { OutputStream } from './vss-admin/progress.js';

/** Where a command writes, and the user's interrupt: the process's, or captures in tests. */
export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  /** Subscribes to the user's interrupt (Ctrl-C) while an operation is waited on; returns the unsubscribe. */
  onInterrupt(handler: () => void): () => void;
  /** Between polls of a waited-on vss admin operation (default 500 ms). */
  pollIntervalMs?: number;
  /** Plain-line progress (not a terminal): the longest silence while progress moves (default 5 s). */
  plainProgressIntervalMs?: number;
}

export interface CliContext {
  /** `--settings FILE` (the one given closest to the command), else undefined: LATTICE_SETTINGS_FILE or none. */
  settingsFile: string | undefined;
  io: CliIo;
}

/** One run of the command line: where it writes, and the exit status its command chose. */
export interface CliSession {
  io: CliIo;
  exitCode: number;
}

/**
 * A mistake in the command line that only the command itself can see (two flags that exclude each
 * other, a malformed value inside a file): printed with the command's usage, exit status 2.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What a command's runner gets: its parsed options, its positional arguments in order, its context. */
export interface Invocation<O> {
  options: O;
  args: unknown[];
  context: CliContext;
}

/** A command's runner; a number it resolves to is the exit status (default 0). */
export type Runner<O> = (invocation: Invocation<O>) => Promise<unknown>;

/**
 * Sets `load`'s runner as the action of `command`, which also takes `--settings FILE`. The runner's
 * module is imported when the command runs, never while the tree is built. A UsageError becomes
 * commander's usage error (the message, then the command's help, on stderr; exit status 2).
 */
export function lazyAction<O>(
  command: Command,
  session: CliSession,
  load: () => Promise<Runner<O>>,
): Command {
  if (!command.options.some((option) => option.long === '--settings')) command.addOption(settingsOption());
  // Subcommands inherit their parent's setting: only a command that has subcommands takes extra words.
  command.allowExcessArguments(withSubcommands.has(command));
  return command.action(async (...params: unknown[]) => {
    const invoked = params.at(-1) as Command;
    if (invoked.commands.length > 0 && invoked.args.length > 0) {
      const names = invoked.commands.map((sub) => sub.name()).join(', ');
      invoked.error(`unknown command '${invoked.args[0]}' (the commands of '${invoked.name()}': ${names})`, {
        exitCode: 2,
        code: 'commander.unknownCommand',
      });
    }
    const run = await load();
    try {
      const status = await run({
        options: invoked.opts<O & object>(),
        args: invoked.processedArgs as unknown[],
        context: { settingsFile: settingsFileOf(invoked), io: session.io },
      });
      if (typeof status === 'number') session.exitCode = status;
    } catch (err) {
      if (err instanceof UsageError) invoked.error(err.message, { exitCode: 2, code: 'lattice.usage' });
      throw err;
    }
  });
}

/**
 * For a command that runs itself and has subcommands too (`lattice compute`, `lattice vss`): a word
 * after it that names no subcommand is reported as an unknown command, not as an extra argument.
 */
export function runsWithSubcommands(command: Command): Command {
  withSubcommands.add(command);
  // Its own options before a subcommand's name would be dropped silently (`vss --port 1 serving`).
  command.hook('preSubcommand', (parent, subcommand) => {
    const given = parent.options.find(
      (option) =>
        option.long !== '--settings' && parent.getOptionValueSource(option.attributeName()) === 'cli',
    );
    if (given !== undefined) {
      parent.error(
        `${given.long} is an option of '${parent.name()}' itself: give the options of '${subcommand.name()}' after its name`,
        { exitCode: 2, code: 'commander.unknownOption' },
      );
    }
  });
  // `lattice vss help reset` as for commands without an action of their own.
  return command.allowExcessArguments(true).helpCommand(true);
}

const withSubcommands = new WeakSet<Command>();

/** `--settings FILE` is accepted by every command, before or after its name; the innermost wins. */
export function settingsOption(): Option {
  return new Option('--settings <FILE>', 'a JSON or YAML settings file (also LATTICE_SETTINGS_FILE)');
}

function settingsFileOf(command: Command): string | undefined {
  for (let at: Command | null = command; at !== null; at = at.parent) {
    const file = at.getOptionValue('settings') as string | undefined;
    if (file !== undefined) return file;
  }
  return undefined;
}

/** A value parser for an option that may be given several times: the values in order. */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** A value parser: a TCP port, 0 to 65535 (0 picks a free one). */
export function portNumber(text: string): number {
  return integerIn(0, 65535, 'a port number from 0 to 65535')(text);
}

/** A value parser: an integer of at least 1. */
export function positiveInteger(text: string): number {
  return integerIn(1, Number.MAX_SAFE_INTEGER, 'a positive integer')(text);
}

/** A value parser: an integer of at least 0. */
export function wholeNumber(text: string): number {
  return integerIn(0, Number.MAX_SAFE_INTEGER, 'a whole number')(text);
}

/** A value parser for integers from `min` to `max`; `what` names them in the error. */
export function integerIn(min: number, max: number, what = `an integer from ${min} to ${max}`) {
  return (text: string): number => {
    const n = Number(text);
    if (!/^\s*-?\d+\s*$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`It must be ${what}.`);
    }
    return n;
  };
}
