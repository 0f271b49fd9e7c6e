import type { Server } from '@grpc/grpc-js';
import { LatticeError } from '../errors.js';
import type { ServerTls } from '../http/tls-material.js';
import { grpcServerCredentials } from './tls-credentials.js';

export interface ListenOptions {
  /** Names the server in the error; default `gRPC server`. */
  name?: string;
  /** Default 127.0.0.1; an IPv6 host is bracketed here. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Plaintext when absent. */
  tls?: ServerTls;
}

/**
 * Binds a grpc-js server and resolves to the bound port: the one way every gRPC server here starts
 * listening, GrpcServer and the bare servers benchmarks and tests measure it against alike (grpc-js
 * serves as soon as it is bound). UNAVAILABLE naming the address when it cannot listen.
 */
export function listen(server: Server, options: ListenOptions = {}): Promise<number> {
  const { name = 'gRPC server', host = '127.0.0.1', port = 0, tls } = options;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  return new Promise<number>((resolve, reject) => {
    server.bindAsync(address, grpcServerCredentials(tls), (err, bound) => {
      if (err)
        reject(new LatticeError('UNAVAILABLE', `${name}: cannot listen on ${address}: ${err.message}`));
      else resolve(bound);
    });
  });
}
