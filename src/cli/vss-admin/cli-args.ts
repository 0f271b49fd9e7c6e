/**
 * The flag parser of the `lattice vss` admin subcommands. Hand-written rather than node:util
 * parseArgs because the flags are derived from the API's field lists, booleans take `--no-x`
 * (Node 20's parseArgs has no negation) and every mistake must name the flag it is about.
 */

/** A mistake in the command line: printed with the subcommand's usage, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type FlagType = 'string' | 'boolean';

export interface ParsedArgs {
  /** Flag name (kebab-case, without `--`) → its value; a boolean flag's value is a boolean. */
  flags: Map<string, string | boolean>;
  positionals: string[];
}

/**
 * `--name value`, `--name=value`; booleans `--name`, `--no-name`, `--name=true|false`; `--` ends the
 * flags. A flag given twice keeps the last value, as most CLIs do.
 */
export function parseFlags(argv: readonly string[], spec: ReadonlyMap<string, FlagType>): ParsedArgs {
  const flags = new Map<string, string | boolean>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      flags.set('help', true);
      continue;
    }
    if (!arg.startsWith('--') || arg.length === 2) {
      if (arg.startsWith('-') && arg.length > 1) throw new UsageError(`unknown flag ${arg}`);
      positionals.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals === -1 ? undefined : equals);
    const inline = equals === -1 ? undefined : arg.slice(equals + 1);
    const type = spec.get(name);
    if (type === 'boolean') {
      flags.set(name, inline === undefined ? true : booleanValue(name, inline));
    } else if (type === 'string') {
      if (inline !== undefined) {
        flags.set(name, inline);
      } else {
        const next = argv[i + 1];
        if (next === undefined || (next.startsWith('--') && next.length > 2)) {
          throw new UsageError(`--${name} needs a value`);
        }
        flags.set(name, next);
        i++;
      }
    } else if (name.startsWith('no-') && spec.get(name.slice(3)) === 'boolean' && inline === undefined) {
      flags.set(name.slice(3), false);
    } else {
      throw new UsageError(`unknown flag --${name}`);
    }
  }
  return { flags, positionals };
}

function booleanValue(name: string, text: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`--${name} takes true or false, got ${JSON.stringify(text)}`);
}
