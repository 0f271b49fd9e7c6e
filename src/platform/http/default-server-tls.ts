/**
 * The TLS every server of this process serves unless told otherwise. Settings are process-wide, but
 * the services (feature store, model server, compute, orchestrator, vss serving) build their
 * GrpcServer themselves from options that do not carry TLS; the composition root sets this once, at
 * start-up, before any server starts, and GrpcServer and HttpServer read it when their own `tls`
 * option is absent.
 */
import type { ServerTls } from './tls-material.js';

let serverTls: ServerTls | undefined;

/** Sets (or, with undefined, clears) the TLS of servers created without a `tls` option. */
export function serveTlsByDefault(tls: ServerTls | undefined): void {
  serverTls = tls;
}

/** The TLS of servers created without a `tls` option; undefined: plaintext. */
export function defaultServerTls(): ServerTls | undefined {
  return serverTls;
}
