/**
 * The platform tests' own gRPC service (test/fixtures/proto/echo.proto) and a GrpcServer for it with
 * test defaults (free loopback port, silent logs, plaintext, a short shutdown grace).
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { GrpcServer, type GrpcServerOptions } from '../../src/platform/grpc/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';

export const echoProto = fileURLToPath(new URL('../fixtures/proto/echo.proto', import.meta.url));
type Pkg = { [key: string]: Pkg };
/** The Echo client constructor; `EchoClient.service` is its service definition. */
export const EchoClient = (grpc.loadPackageDefinition(loadSync(echoProto)) as unknown as Pkg).lattice!.test!
  .Echo as unknown as grpc.ServiceClientConstructor;

export interface SayRequest {
  text: string;
}
/** Echo's one method, typed. */
export const say = EchoClient.service.Say! as grpc.MethodDefinition<SayRequest, { text: string }>;

/** A GrpcServer named `echo` with the test defaults, `options` over them; add the service, then start it. */
export function echoGrpcServer(options: Partial<GrpcServerOptions> = {}): GrpcServer {
  return new GrpcServer({
    name: 'echo',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    shutdownGraceMs: 100,
    tls: false,
    ...options,
  });
}
