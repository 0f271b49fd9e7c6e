/**
 * The settings of a CLI gRPC client (`lattice predict`, `lattice search`): the settings file and
 * LATTICE_* variables with the client flags (client-flags.ts) winning, and from them the options of
 * the published clients (caller id and token, their headers, TLS read and checked as every other
 * outgoing call's: platform/http/tls-material.ts).
 */
import type { ClientOptions } from '../platform/grpc/client-options.js';
import { tlsOf } from '../platform/http/index.js';
import { type LoadedSettings, loadSettings } from '../platform/settings/index.js';
import type { ClientFlags } from './client-flags.js';

/** The flags as settings overrides (loadSettings `overrides`): only those given. */
function overridesOf(flags: ClientFlags): Record<string, unknown> {
  const given = (entries: [string, string | undefined][]): Record<string, string> =>
    Object.fromEntries(entries.filter((entry): entry is [string, string] => entry[1] !== undefined));
  const tls: Record<string, string> = given([
    ['ca', flags.tlsCa],
    ['clientCert', flags.tlsCert],
    ['clientKey', flags.tlsKey],
    ['serverName', flags.tlsServerName],
  ]);
  if (flags.tls || flags.tlsCa !== undefined || flags.tlsCert !== undefined) tls.outgoing = 'on';
  return {
    auth: given([
      ['callerId', flags.callerId],
      ['callerToken', flags.callerToken],
    ]),
    tls,
  };
}

/** The settings with the flags applied, and the client options they give. */
export function clientSettings(
  flags: ClientFlags,
  settingsFile: string | undefined,
): { settings: LoadedSettings; options: ClientOptions } {
  const settings = loadSettings({ file: settingsFile, overrides: overridesOf(flags) });
  const { auth } = settings;
  const tls = tlsOf(settings).client;
  return {
    settings,
    options: {
      idHeader: auth.callerIdHeader,
      tokenHeader: auth.callerTokenHeader,
      ...(auth.callerId === undefined ? {} : { callerId: auth.callerId }),
      ...(auth.callerToken === undefined ? {} : { callerToken: auth.callerToken }),
      ...(tls === undefined ? {} : { tls }),
    },
  };
}
