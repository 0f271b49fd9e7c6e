/**
 * The flags of the CLI's gRPC clients (`lattice predict`, `lattice search`): the caller id and token a
 * server with caller tokens on asks for, and TLS. Each flag overrides its setting (auth.callerId,
 * auth.callerToken, tls.*), so the settings file and LATTICE_* variables configure the same things.
 * Imports nothing but commander (see command-kit.ts).
 */
import type { Command } from 'commander';

export interface ClientFlags {
  callerId?: string;
  callerToken?: string;
  tls?: boolean;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
}

/** Adds the client flags to `command`. */
export function addClientFlags(command: Command): Command {
  return command
    .option(
      '--caller-id <ID>',
      'caller id sent to a server with caller tokens on (default: LATTICE_CALLER_ID)',
    )
    .option('--caller-token <TOKEN>', "the caller's token (default: LATTICE_CALLER_TOKEN)")
    .option(
      '--tls',
      'dial TLS, trusting --tls-ca or LATTICE_TLS_CA, else the system roots (also: an https:// address)',
    )
    .option('--tls-ca <FILE>', 'PEM CA bundle to trust (tls.ca); implies --tls')
    .option('--tls-cert <FILE>', 'PEM client certificate, with --tls-key (tls.clientCert); implies --tls')
    .option('--tls-key <FILE>', 'PEM private key of --tls-cert (tls.clientKey)')
    .option('--tls-server-name <NAME>', "name to check in the server's certificate (tls.serverName)");
}
