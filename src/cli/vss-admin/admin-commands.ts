/**
 * Declares the vss admin subcommands (`lattice vss register-store | … | models`) to the parser, one
 * flag per body field of each (subcommand-specs.ts), so a flag cannot exist without its help line.
 * Cheap to load: the client and the runs are imported when a subcommand runs.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { addressOption } from '../address-option.js';
import { type CliSession, integerIn, lazyAction } from '../command-kit.js';
import { addDeprecatedAlias } from '../deprecated-alias.js';
import type { BodyField } from './request-input.js';
import { type FlagHelp, SUBCOMMAND_SPECS, type SubcommandSpec } from './subcommand-specs.js';

const BODY_FLAGS: readonly FlagHelp[] = [
  {
    flag: 'file',
    type: 'string',
    value: 'FILE',
    help: 'the request body: a JSON file, or YAML for .yaml/.yml; flags override its fields',
  },
  { flag: 'idempotency-key', type: 'string', value: 'KEY', help: 'sent as Idempotency-Key: safe to repeat' },
];

const ADDRESS_HELP = 'the admin API (default http://<host>:<vss.admin.port> from the settings)';

const COMMON_FLAGS: readonly FlagHelp[] = [
  {
    flag: 'api-key',
    type: 'string',
    value: 'KEY',
    help: 'sent as Authorization: Bearer (default the first of vss.admin.apiKeys)',
  },
  { flag: 'json', type: 'boolean', help: "print the API's JSON answer instead of a summary" },
];

const EXIT_STATUSES =
  '\nExit status: 0 done (operation SUCCEEDED when waited on), 1 API error or operation FAILED, 2 usage error,\n' +
  '130 stopped waiting with Ctrl-C (the operation keeps running).';

/**
 * The flags a subcommand's run reads, by their kebab-case name (`--no-wait` sets `wait` false); an
 * integer field's flag holds its number, checked while parsing.
 */
export type AdminFlags = ReadonlyMap<string, string | boolean | number>;

/** An integer body field's value: what the API's integer fields can hold. */
const integerField = integerIn(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'an integer');

/** A number body field's value (`--min-recall 0.9`): any finite number; the API checks its range. */
function numberField(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(`must be a number, got ${JSON.stringify(text)}`);
  }
  return value;
}

function fieldOptions(field: BodyField): Option[] {
  if (field.kind === 'boolean') {
    return [
      new Option(`--${field.flag}`, `${field.field} true`),
      new Option(`--no-${field.flag}`, `${field.field} false`),
    ];
  }
  const aliases = (field.aliases ?? []).map((alias) => `, also --${alias}`).join('');
  const value =
    field.kind === 'integer'
      ? 'N'
      : field.kind === 'number'
        ? 'X'
        : field.kind === 'json'
          ? 'JSON|@FILE'
          : 'TEXT';
  const help =
    field.kind === 'json'
      ? `${field.field}: JSON text, or @file (JSON or YAML)${aliases}`
      : `${field.field}${aliases}`;
  const option = new Option(`--${field.flag} <${value}>`, help);
  if (field.kind === 'integer') option.argParser(integerField);
  if (field.kind === 'number') option.argParser(numberField);
  if (field.choices !== undefined) option.choices(field.choices);
  // Each alias takes its value as the field's own flag does (same checks, same choices).
  const hidden = (field.aliases ?? []).map((alias) => {
    const same = new Option(`--${alias} <${value}>`, `same as --${field.flag}`).hideHelp();
    if (option.parseArg !== undefined) same.argParser(option.parseArg);
    return same;
  });
  return [option, ...hidden];
}

const flagOption = (help: FlagHelp): Option =>
  new Option(help.type === 'boolean' ? `--${help.flag}` : `--${help.flag} <${help.value}>`, help.help);

function subcommandOptions(spec: SubcommandSpec): Option[] {
  const options = spec.fields.flatMap(fieldOptions);
  if (spec.sendsBody) options.push(...BODY_FLAGS.map(flagOption));
  options.push(...spec.flags.map(flagOption));
  if (spec.waitByDefault !== undefined) {
    options.push(
      new Option(
        '--wait',
        spec.waitByDefault
          ? 'wait for the operation with a progress bar (the default)'
          : 'wait for the operation with a progress bar',
      ),
      new Option('--no-wait', 'return once the operation is accepted'),
    );
  }
  options.push(...COMMON_FLAGS.map(flagOption));
  return options;
}

/** Adds every admin subcommand to `vss`. */
export function defineVssAdminCommands(vss: Command, session: CliSession): void {
  for (const spec of SUBCOMMAND_SPECS) {
    const command = vss.command(spec.name).summary(spec.about).description(adminDescription(spec));
    if (spec.positional !== undefined) command.argument(`<${spec.positional}>`);
    const options = subcommandOptions(spec);
    const address = addressOption('http', ADDRESS_HELP);
    options.push(address);
    for (const option of options) command.addOption(option);
    addDeprecatedAlias(command, address, '--url <URL>', session.io);
    command.addHelpText('after', EXIT_STATUSES);
    // kebab-case flag name of each option's value, as the runs read them
    const names = options.map((option): [string, string] => [
      option.attributeName(),
      option.negate ? option.long!.slice('--no-'.length) : option.long!.slice(2),
    ]);
    lazyAction<Record<string, unknown>>(command, session, async () => {
      const { runVssAdminCommand } = await import('./run-command.js');
      return ({ options: values, args, context }) => {
        const flags = new Map<string, string | boolean | number>();
        for (const [attribute, flag] of names) {
          const value = values[attribute];
          if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') {
            flags.set(flag, value);
          }
        }
        return runVssAdminCommand(spec, flags, args as string[], context);
      };
    });
  }
}

function adminDescription(spec: SubcommandSpec): string {
  const lines = [spec.about];
  if (spec.sendsBody && spec.fields.length > 0) {
    lines.push("Flags set the API's snake_case fields; a --file body's other fields are sent as written.");
  }
  return lines.join('\n');
}
