/**
 * The server name of an outgoing TLS connection: sent as SNI only when it is a DNS name (RFC 6066
 * allows no IP address there; Node 20–24 sent one with a warning, DEP0123, Node 26 refuses the
 * connection, ERR_INVALID_ARG_VALUE), and checked in the server's certificate either way (an IP
 * address against the certificate's IP addresses). Shared by the gRPC channels and the HTTPS fetch.
 */
import { isIP } from 'node:net';
import { type ConnectionOptions, checkServerIdentity } from 'node:tls';

export function serverNameOptions(
  name: string,
): Pick<ConnectionOptions, 'servername' | 'checkServerIdentity'> {
  if (isIP(name) === 0) return { servername: name };
  return { checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert) };
}
