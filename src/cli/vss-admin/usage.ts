/**
 * Usage texts, generated from the subcommands' field lists so a flag cannot exist without its line.
 * Also the flags every subcommand takes, which the parser and the texts share.
 */
import type { FlagType } from './cli-args.js';
import type { BodyField } from './request-input.js';
import type { FlagHelp, Subcommand } from './subcommands.js';

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
  { flag: 'help', type: 'boolean', help: 'this text (also -h)' },
];

const BODY_FLAGS: readonly FlagHelp[] = [
  {
    flag: 'file',
    type: 'string',
    value: 'FILE',
    help: 'the request body: a JSON file, or YAML for .yaml/.yml; flags override its fields',
  },
  { flag: 'idempotency-key', type: 'string', value: 'KEY', help: 'sent as Idempotency-Key: safe to repeat' },
];

const waitFlag = (byDefault: boolean): FlagHelp => ({
  flag: 'wait',
  type: 'boolean',
  help: byDefault
    ? 'wait for the operation with a progress bar (the default; --no-wait returns once accepted)'
    : 'wait for the operation with a progress bar',
});

/** Every flag of a subcommand with its help, in usage order. */
export function subcommandFlags(subcommand: Subcommand): FlagHelp[] {
  const flags: FlagHelp[] = subcommand.fields.map(fieldFlag);
  if (subcommand.sendsBody) flags.push(...BODY_FLAGS);
  flags.push(...subcommand.flags);
  if (subcommand.waitByDefault !== undefined) flags.push(waitFlag(subcommand.waitByDefault));
  flags.push(...COMMON_FLAGS);
  return flags;
}

/** The flag types the parser needs, aliases of fields included. */
export function flagTypes(subcommand: Subcommand): Map<string, FlagType> {
  const types = new Map<string, FlagType>();
  for (const help of subcommandFlags(subcommand)) types.set(help.flag, help.type);
  for (const field of subcommand.fields) {
    for (const alias of field.aliases ?? [])
      types.set(alias, field.kind === 'boolean' ? 'boolean' : 'string');
  }
  return types;
}

function fieldFlag(field: BodyField): FlagHelp {
  const aliases = (field.aliases ?? []).map((alias) => `, also --${alias}`).join('');
  switch (field.kind) {
    case 'boolean':
      return { flag: field.flag, type: 'boolean', help: `${field.field} true (--no-${field.flag}: false)` };
    case 'integer':
      return { flag: field.flag, type: 'string', value: 'N', help: `${field.field}${aliases}` };
    case 'json':
      return {
        flag: field.flag,
        type: 'string',
        value: 'JSON|@FILE',
        help: `${field.field}: JSON text, or @file (JSON or YAML)${aliases}`,
      };
    case 'string':
      return { flag: field.flag, type: 'string', value: 'TEXT', help: `${field.field}${aliases}` };
  }
}

/** `lattice vss reset --help`. */
export function subcommandUsage(subcommand: Subcommand): string {
  const positional = subcommand.positional === undefined ? '' : ` <${subcommand.positional}>`;
  const lines = [`Usage: lattice vss ${subcommand.name}${positional} [flags]`, `  ${subcommand.about}`];
  if (subcommand.sendsBody && subcommand.fields.length > 0) {
    lines.push("  Flags set the API's snake_case fields; a --file body's other fields are sent as written.");
  }
  lines.push('', 'Flags:');
  const rows = subcommandFlags(subcommand).map((help) => [
    `--${help.flag}${help.value === undefined ? '' : ` ${help.value}`}`,
    help.help,
  ]);
  const width = Math.max(...rows.map(([left]) => left!.length));
  for (const [left, right] of rows) lines.push(`  ${left!.padEnd(width)}  ${right}`);
  lines.push('', EXIT_STATUSES);
  return lines.join('\n');
}

const EXIT_STATUSES =
  'Exit status: 0 done (operation SUCCEEDED when waited on), 1 API error or operation FAILED, 2 usage error,\n' +
  '130 stopped waiting with Ctrl-C (the operation keeps running).';

/**
 * The lines for `lattice vss --help` and the global usage (the lead adds them to src/cli/commands/vss.ts
 * and src/cli/main.ts).
 */
export const VSS_ADMIN_USAGE = `  lattice vss register-store | register-model | register-variant [--file FILE] [field flags]
  lattice vss reset --entity E --model M [--frequency F]
  lattice vss trigger --entity E --model M --variant V
  lattice vss promote --entity E --model M [--variant V]
  lattice vss retry <operation-id>
  lattice vss status <operation-id> [--wait]
  lattice vss models [--entity E --model M]
      clients of the vss admin HTTP API (--url, default http://<host>:<vss.admin.port>; --api-key,
      default the first of vss.admin.apiKeys). A body comes from --file (JSON or YAML) and/or flags
      (--store-id, --model-config '{"vector_dimension":64,...}' or @file, …). reset, trigger, promote
      and retry wait for the operation with a progress bar (--no-wait returns once accepted); --json
      prints the API's answer. "lattice vss <subcommand> --help" lists a subcommand's flags.`;
