/**
 * `lattice vss <admin subcommand>`: parses the flags, runs the subcommand against the admin API and
 * turns every failure into a message and an exit status — 2 for a usage error (with the usage), 1
 * for an API error (`lattice: <message> (<code>, field <field>)`), an unreachable API (with how to
 * start it) or a FAILED operation, 130 when the user stopped waiting. It returns the status instead
 * of exiting, so it runs in-process in tests.
 */
import { describeError } from '../../platform/errors.js';
import type { ClientTls } from '../../platform/http/index.js';
import { AdminApiError, AdminClient, AdminUnreachableError } from './admin-client.js';
import { parseFlags, UsageError } from './cli-args.js';
import { type CommandContext, printLine, type VssAdminIo } from './command-context.js';
import { SUBCOMMANDS, type Subcommand } from './subcommands.js';
import { flagTypes, subcommandUsage } from './usage.js';

export interface VssAdminSettings {
  /** `http://<host>:<vss.admin.port>` of the settings. */
  adminUrl: string;
  /** The first of `vss.admin.apiKeys`, or from the environment. */
  apiKey?: string | undefined;
  /** What an https:// admin URL is trusted by and shown (settings `tls`). */
  tls?: ClientTls | undefined;
}

const BY_NAME = new Map(SUBCOMMANDS.map((subcommand) => [subcommand.name, subcommand]));

/** The subcommand names `runVssAdminCommand` handles. */
export const VSS_ADMIN_SUBCOMMANDS: ReadonlySet<string> = new Set(BY_NAME.keys());

function processIo(): VssAdminIo {
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

/** Runs one admin subcommand; resolves to its exit status (it never calls process.exit). */
export async function runVssAdminCommand(
  subcommand: string,
  argv: readonly string[],
  settings: VssAdminSettings,
  io: VssAdminIo = processIo(),
): Promise<number> {
  const spec = BY_NAME.get(subcommand);
  if (spec === undefined) {
    printLine(
      io.stderr,
      `lattice: unknown vss admin subcommand "${subcommand}" (one of ${[...VSS_ADMIN_SUBCOMMANDS].join(', ')})`,
    );
    return 2;
  }
  let context: CommandContext;
  try {
    context = prepare(spec, argv, settings, io);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return usageError(io, spec, err);
  }
  if (context.flags.get('help') === true) {
    printLine(io.stdout, subcommandUsage(spec));
    return 0;
  }
  try {
    return await spec.run(context);
  } catch (err) {
    if (err instanceof UsageError) return usageError(io, spec, err);
    printLine(io.stderr, `lattice: ${failureMessage(err)}`);
    return 1;
  }
}

function prepare(
  spec: Subcommand,
  argv: readonly string[],
  settings: VssAdminSettings,
  io: VssAdminIo,
): CommandContext {
  const { flags, positionals } = parseFlags(argv, flagTypes(spec));
  if (flags.get('help') !== true) {
    const wanted = spec.positional === undefined ? 0 : 1;
    if (positionals.length < wanted) throw new UsageError(`${spec.name} needs the <${spec.positional}>`);
    if (positionals.length > wanted) throw new UsageError(`unexpected argument "${positionals[wanted]}"`);
  }
  const url = flagText(flags, 'url') ?? settings.adminUrl;
  if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url)) {
    throw new UsageError(`--url must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  const apiKey = flagText(flags, 'api-key') ?? settings.apiKey;
  return {
    client: new AdminClient({ url, apiKey, tls: settings.tls }),
    flags,
    positionals,
    json: flags.get('json') === true,
    io,
  };
}

const flagText = (flags: ReadonlyMap<string, string | boolean>, name: string): string | undefined => {
  const value = flags.get(name);
  return typeof value === 'string' ? value : undefined;
};

function usageError(io: VssAdminIo, spec: Subcommand, err: UsageError): number {
  printLine(io.stderr, `lattice: ${err.message}\n\n${subcommandUsage(spec)}`);
  return 2;
}

function failureMessage(err: unknown): string {
  if (err instanceof AdminApiError) {
    const field = err.field === undefined ? '' : `, field ${err.field}`;
    return `${err.message} (${err.apiCode}${field})`;
  }
  if (err instanceof AdminUnreachableError) {
    return (
      `${err.message}. Start it with "lattice vss" (the vss services with their admin API) or ` +
      `"lattice up", or point --url at where it runs.`
    );
  }
  return describeError(err);
}
