/**
 * The options every published client takes (`lattice/client`'s OrchestratorClient and
 * `lattice/vss-client`'s VssClient): where to dial, TLS, and the caller id / token a server with
 * caller-token auth asks for. One shape for both, turned here into a target, channel credentials and
 * the metadata every call carries. Kept free of the rest of the platform (it imports only
 * tls-credentials.ts), so the published clients load nothing of the servers.
 */
import { type ChannelCredentials, Metadata } from '@grpc/grpc-js';
import { LatticeError } from '../errors.js';
import { dialTarget } from './tls-credentials.js';

/** TLS of the client's calls; PEM contents, not file names. */
export interface ClientTlsOptions {
  /** CA bundle to trust instead of the system's roots. */
  ca?: string | Buffer;
  /** Client certificate and its key, for a server that asks for one. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Name checked in the server's certificate instead of the host dialled. */
  serverName?: string;
}

export interface ClientOptions {
  /** Sent on every call as `idHeader` metadata, for a server with caller tokens on. */
  callerId?: string;
  /** Sent on every call as `tokenHeader` metadata; give it with `callerId`. */
  callerToken?: string;
  /** Default `caller-id` (the servers' `auth.callerIdHeader`). */
  idHeader?: string;
  /** Default `caller-token` (the servers' `auth.callerTokenHeader`). */
  tokenHeader?: string;
  /**
   * TLS: `true` (the system's roots) or what to trust and present. An `https://host:port` address
   * dials TLS without it; a bare `host:port` is plaintext unless it is given.
   */
  tls?: boolean | ClientTlsOptions;
}

const pem = (value: string | Buffer | undefined): Buffer | undefined =>
  value === undefined ? undefined : Buffer.from(value);

/** The target, credentials and per-call metadata of `options`; a caller id without its token (or the reverse) is INVALID_ARGUMENT. */
export function dialClient(
  address: string,
  options: ClientOptions = {},
): { target: string; credentials: ChannelCredentials; metadata: Metadata } {
  const { callerId, callerToken, tls } = options;
  if (Boolean(callerId) !== Boolean(callerToken)) {
    const missing = callerId ? 'callerToken' : 'callerId';
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `${missing} is missing: a server with caller tokens on needs both callerId and callerToken`,
      { field: missing },
    );
  }
  const { target, credentials } = dialTarget(
    address,
    typeof tls === 'object'
      ? {
          ca: pem(tls.ca),
          cert: pem(tls.cert),
          key: pem(tls.key),
          ...(tls.serverName === undefined ? {} : { serverName: tls.serverName }),
        }
      : tls,
  );
  const metadata = new Metadata();
  if (callerId && callerToken) {
    metadata.set(options.idHeader ?? 'caller-id', callerId);
    metadata.set(options.tokenHeader ?? 'caller-token', callerToken);
  }
  return { target, credentials, metadata };
}
