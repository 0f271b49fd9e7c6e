/**
 * grpc-js credentials from the TLS material of settings `tls` (http/tls-material.ts): what a
 * GrpcServer binds with and what a channel dials with. Kept free of the rest of the platform, so the
 * published client (src/orchestrator/client.ts) can use it alone.
 */

import { type ChannelCredentials, credentials, ServerCredentials } from '@grpc/grpc-js';
import { LatticeError } from '../errors.js';
import type { ClientTls, ServerTls } from '../http/tls-material.js';
import { TlsChannelCredentials } from './tls-channel-credentials.js';

/**
 * Client certificates asked for but not required. grpc-js's `createSsl` only knows "not asked" and
 * "required", so this gives Node's TLS server both options itself: a connection without a trusted
 * certificate is served as one without any.
 */
class OptionalClientCertificates extends ServerCredentials {
  constructor(tls: ServerTls) {
    super(
      { requestCert: true, rejectUnauthorized: false },
      { ca: tls.clientCa, cert: tls.cert, key: tls.key },
    );
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

/** The credentials a server binds with: plaintext without `tls`. */
export function grpcServerCredentials(tls: ServerTls | undefined): ServerCredentials {
  if (tls === undefined) return ServerCredentials.createInsecure();
  if (tls.clientAuth === 'optional') return new OptionalClientCertificates(tls);
  const required = tls.clientAuth === 'required';
  return ServerCredentials.createSsl(
    required ? (tls.clientCa ?? null) : null,
    [{ cert_chain: tls.cert, private_key: tls.key }],
    required,
  );
}

/**
 * The credentials a channel dials with: plaintext without `tls`; otherwise TLS trusting `tls.ca` (else
 * the system's roots), presenting `tls.cert`, and checking `tls.serverName` in the server's
 * certificate instead of the host dialled when it is set.
 */
export function grpcChannelCredentials(tls: ClientTls | undefined): ChannelCredentials {
  if (tls === undefined) return credentials.createInsecure();
  if ((tls.key === undefined) !== (tls.cert === undefined)) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      'a client certificate needs its key, and a key its certificate',
      {
        field: tls.key === undefined ? 'tls.key' : 'tls.cert',
      },
    );
  }
  return new TlsChannelCredentials(tls);
}

/**
 * A target as a user writes it, with its credentials: `https://host:port` dials TLS (`tls` or the
 * system's roots), `http://host:port` plaintext, a bare `host:port` TLS exactly when `tls` is given
 * (`true`: the system's roots). A path or query after the port is a mistake, not a gRPC route.
 */
export function dialTarget(
  address: string,
  tls: ClientTls | boolean | undefined,
): { target: string; credentials: ChannelCredentials } {
  const scheme = /^(https?):\/\//i.exec(address)?.[1]?.toLowerCase();
  let target = address;
  if (scheme !== undefined) {
    target = address.slice(scheme.length + 3).replace(/\/+$/, '');
    if (target === '' || /[/?#]/.test(target)) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `invalid gRPC address "${address}": expected ${scheme}://host:port`,
        {
          field: 'address',
        },
      );
    }
  }
  if (scheme === 'http' && tls !== undefined && tls !== false) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `the address "${address}" is plaintext (http://) but TLS options were given`,
      {
        field: 'address',
      },
    );
  }
  const secure = scheme === 'https' || (scheme === undefined && tls !== undefined && tls !== false);
  if (!secure) return { target, credentials: credentials.createInsecure() };
  return { target, credentials: grpcChannelCredentials(typeof tls === 'object' ? tls : {}) };
}
