/**
 * The TLS credentials of a gRPC channel (what `credentials.createSsl` gives, connecting the way
 * Node's https client does). grpc-js 1.14 sends the host it dials as the TLS server name even when
 * that host is an IP address: Node 26 refuses such a connection (ERR_INVALID_ARG_VALUE), so every
 * TLS channel to an address like 127.0.0.1 stayed UNAVAILABLE. Here the host dialled and
 * `serverName` go through serverNameOptions: SNI for a DNS name only, the certificate checked
 * against `serverName`, else the host dialled.
 */
import { isIP } from 'node:net';
import { connect, createSecureContext, type SecureContext } from 'node:tls';
import { CallCredentials, ChannelCredentials, type ChannelOptions, experimental } from '@grpc/grpc-js';
import type { ClientTls } from '../http/tls-material.js';
import { serverNameOptions } from '../http/tls-server-name.js';

/** A URI's scheme and authority as grpc-js writes them (`dns:`, `dns://8.8.8.8/`). */
const URI_PREFIX = /^[a-z][a-z\d+.-]*:(?:\/\/[^/]*\/)?/i;

/**
 * The host a channel's certificate is checked for, as grpc-js derives it: behind an HTTP CONNECT
 * proxy the target beyond it, `localhost` for a Unix socket, else the target's (first) host.
 */
function dialledHost(target: experimental.GrpcUri, options: ChannelOptions): string {
  const proxied = options['grpc.http_connect_target'];
  const authority =
    typeof proxied === 'string'
      ? proxied.replace(URI_PREFIX, '')
      : target.scheme?.startsWith('unix')
        ? 'localhost'
        : (target.path.split(',')[0] ?? target.path);
  return experimental.splitHostPort(authority)?.host ?? authority;
}

export class TlsChannelCredentials extends ChannelCredentials {
  private readonly context: SecureContext;

  /** `tls.ca` unset: Node's root certificates. */
  constructor(private readonly tls: ClientTls) {
    super();
    this.context = createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key });
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: ChannelCredentials): boolean {
    return other === this;
  }

  _createSecureConnector(
    target: experimental.GrpcUri,
    options: ChannelOptions,
    callCredentials: CallCredentials = CallCredentials.createEmpty(),
  ): experimental.SecureConnector {
    const dialled = dialledHost(target, options);
    const tlsOptions = {
      secureContext: this.context,
      ALPNProtocols: ['h2'],
      // As Node's https client: the host dialled as SNI unless `serverName` is a DNS name.
      ...(isIP(dialled) === 0 ? { servername: dialled } : {}),
      ...serverNameOptions(this.tls.serverName ?? dialled),
    };
    return {
      connect: (socket) =>
        new Promise((resolve, reject) => {
          const secured = connect({ ...tlsOptions, socket }, () =>
            resolve({ socket: secured, secure: true }),
          );
          // Kept for the socket's life: an error after the handshake must not go unhandled.
          secured.on('error', reject);
        }),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => callCredentials,
      destroy: () => {},
    };
  }
}
