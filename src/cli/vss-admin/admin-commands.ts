/**
 * Declares the vss admin subcommands (`lattice vss register-store | … | models`) to the parser, one
 * flag per body field of each (subcommand-specs.ts), so a flag cannot exist without its help line.
 * Cheap to load: the client and the runs are imported when a subcommand runs.
 */
import { type Command, Option } from 'commander';
import { type CliSession, lazyAction } from '../command-kit.js';
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

const COMMON_FLAGS: readonly FlagHelp[] = [
  {
    flag: 'url',
    type: 'string',
    value: 'URL',
    help: 'the admin API (default http://<host>:<vss.admin.port> from the settings)',
  },
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

/** The flags a subcommand's run reads, by their kebab-case name (`--no-wait` sets `wait` false). */
export type AdminFlags = ReadonlyMap<string, string | boolean>;

function fieldOptions(field: BodyField): Option[] {
  const aliases = (field.aliases ?? []).map((alias) => `, also --${alias}`).join('');
  const hiddenAliases = (value: string) =>
    (field.aliases ?? []).map((alias) =>
      new Option(`--${alias} <${value}>`, `same as --${field.flag}`).hideHelp(),
    );
  switch (field.kind) {
    case 'boolean':
      return [
        new Option(`--${field.flag}`, `${field.field} true`),
        new Option(`--no-${field.flag}`, `${field.field} false`),
      ];
    case 'integer':
      return [new Option(`--${field.flag} <N>`, `${field.field}${aliases}`), ...hiddenAliases('N')];
    case 'json':
      return [
        new Option(
          `--${field.flag} <JSON|@FILE>`,
          `${field.field}: JSON text, or @file (JSON or YAML)${aliases}`,
        ),
        ...hiddenAliases('JSON|@FILE'),
      ];
    case 'string':
      return [new Option(`--${field.flag} <TEXT>`, `${field.field}${aliases}`), ...hiddenAliases('TEXT')];
  }
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
    for (const option of options) command.addOption(option);
    command.addHelpText('after', EXIT_STATUSES);
    // kebab-case flag name of each option's value, as the runs read them
    const names = options.map((option): [string, string] => [
      option.attributeName(),
      option.negate ? option.long!.slice('--no-'.length) : option.long!.slice(2),
    ]);
    lazyAction<Record<string, unknown>>(command, session, async () => {
      const { runVssAdminCommand } = await import('./run-command.js');
      return ({ options: values, args, context }) => {
        const flags = new Map<string, string | boolean>();
        for (const [attribute, flag] of names) {
          const value = values[attribute];
          if (typeof value === 'string' || typeof value === 'boolean') flags.set(flag, value);
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
