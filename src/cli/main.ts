import { parseArgs } from 'node:util';
import { describeError, isLatticeError } from '../platform/errors.js';
import { runCheck } from './commands/check.js';
import { runSettings } from './commands/settings.js';
import { runUp } from './commands/up.js';

const usage = `lattice — the Lattice ML serving platform

Usage: lattice <command> [options]

Commands:
  up         start every part of the platform on the configured adapters (embedded by default)
  check      open every configured adapter (config store, queue, SQL, cache) and report
  settings   print the effective settings (tokens redacted) and where each can be set
  help       this text

Options (every command):
  --settings FILE   a JSON or YAML settings file (also LATTICE_SETTINGS_FILE)

Configuration is read from LATTICE_* environment variables and the settings file; see README.md.`;

export interface CliContext {
  args: string[];
  settingsFile: string | undefined;
}

const commands: Record<string, (context: CliContext) => Promise<void>> = {
  up: runUp,
  check: runCheck,
  settings: runSettings,
};

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { settings: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: false,
  });
  const [name, ...args] = positionals;
  if (!name || name === 'help' || values.help) {
    console.log(usage);
    return;
  }
  const command = commands[name];
  if (!command) {
    console.error(`lattice: unknown command "${name}"\n\n${usage}`);
    process.exitCode = 2;
    return;
  }
  await command({ args, settingsFile: typeof values.settings === 'string' ? values.settings : undefined });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  // Errors a user can act on print their message alone; anything else keeps its stack.
  console.error(`lattice: ${isLatticeError(err) ? err.message : describeError(err)}`);
  if (!isLatticeError(err) && err instanceof Error) console.error(err.stack);
  process.exit(1);
});
