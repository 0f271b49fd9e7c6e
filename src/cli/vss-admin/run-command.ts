/**
 * `lattice vss <admin subcommand>` once the command line is parsed: runs the subcommand against the
 * admin API and turns every failure into a message and an exit status — 1 for an API error
 * (`lattice: <message> (<code>, field <field>)`), an unreachable API (with how to start it) or a
 * FAILED operation, 130 when the user stopped waiting. A usage error (a flag value the API field
 * cannot take) is thrown as UsageError, which the parser reports with the usage (exit status 2).
 */
import { describeError } from '../../platform/errors.js';
import { tlsOf } from '../../platform/http/index.js';
import { loadSettings } from '../../platform/settings/index.js';
import { httpBaseUrl } from '../address-option.js';
import { type CliContext, UsageError } from '../command-kit.js';
import { AdminApiError, AdminClient, AdminUnreachableError } from './admin-client.js';
import type { AdminFlags } from './admin-commands.js';
import { printLine } from './command-context.js';
import type { SubcommandSpec } from './subcommand-specs.js';
import { SUBCOMMAND_RUNS } from './subcommands.js';

/** Runs one admin subcommand; resolves to its exit status (it never calls process.exit). */
export async function runVssAdminCommand(
  spec: SubcommandSpec,
  flags: AdminFlags,
  positionals: readonly string[],
  { settingsFile, io }: CliContext,
): Promise<number> {
  const settings = loadSettings({ file: settingsFile });
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  const tls = tlsOf(settings);
  const given = flagText(flags, 'address');
  const url =
    given === undefined
      ? `${tls.client ? 'https' : 'http'}://${host}:${settings.vss.admin.port}`
      : httpBaseUrl(given, Boolean(tls.client));
  const apiKey = flagText(flags, 'api-key') ?? settings.vss.admin.apiKeys[0];
  const context = {
    client: new AdminClient({ url, apiKey, tls: tls.client }),
    flags,
    positionals,
    json: flags.get('json') === true,
    io,
  };
  try {
    return await SUBCOMMAND_RUNS[spec.name](context, spec);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    printLine(io.stderr, `lattice: ${failureMessage(err)}`);
    return 1;
  }
}

const flagText = (flags: AdminFlags, name: string): string | undefined => {
  const value = flags.get(name);
  return typeof value === 'string' ? value : undefined;
};

function failureMessage(err: unknown): string {
  if (err instanceof AdminApiError) {
    const field = err.field === undefined ? '' : `, field ${err.field}`;
    return `${err.message} (${err.apiCode}${field})`;
  }
  if (err instanceof AdminUnreachableError) {
    return (
      `${err.message}. Start it with "lattice vss" (the vss services with their admin API) or ` +
      `"lattice up", or point --address at where it runs.`
    );
  }
  return describeError(err);
}
