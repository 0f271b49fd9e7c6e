/**
 * Secure by default: a process bound to an address other than loopback refuses to start while any
 * server it runs would take calls from the network with no auth, unless `auth.allowUnauthenticated`
 * says so explicitly. Auth is caller tokens (gRPC servers), API keys (the vss admin API) or, for
 * every server, required client certificates. The ops ports (/healthz, /readyz, /metrics, /models)
 * and the platform health server serve reads of the process's own state only and are not counted;
 * the ops routes of the embedded queue (read, publish, dead letters: `lattice up` and `lattice vss`)
 * serve data and are.
 */
import { isIP } from 'node:net';
import { LatticeError } from '../platform/errors.js';
import type { Settings } from '../platform/settings/index.js';

/** How a server authenticates callers besides client certificates; `none`: it has no auth of its own. */
export type ServerAuth = 'callerTokens' | 'apiKeys' | 'none';

export interface ExposedServer {
  /** What the message names, e.g. `orchestrator gRPC`. */
  name: string;
  auth: ServerAuth;
}

export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || /^::ffff:127\./i.test(host);
}

const SETTING: Record<Exclude<ServerAuth, 'none'>, string> = {
  callerTokens: 'auth.callerTokens (LATTICE_CALLER_TOKENS)',
  apiKeys: 'vss.admin.apiKeys (LATTICE_VSS_ADMIN_API_KEYS)',
};

function hasAuth(settings: Settings, auth: ServerAuth): boolean {
  if (auth === 'callerTokens') return Object.keys(settings.auth.callerTokens).length > 0;
  return auth === 'apiKeys' && settings.vss.admin.apiKeys.length > 0;
}

/** FAILED_PRECONDITION naming each unauthenticated server and every way out, when the bind exposes one. */
export function checkExposure(
  settings: Settings,
  servers: readonly ExposedServer[],
  host = settings.host,
): void {
  if (isLoopbackHost(host) || settings.auth.allowUnauthenticated) return;
  if (settings.tls.clientAuth === 'required') return;
  const open = servers.filter((server) => !hasAuth(settings, server.auth));
  if (open.length === 0) return;
  const named = open.map(({ name, auth }) =>
    auth === 'none' ? `${name} (no auth of its own)` : `${name} (set ${SETTING[auth]})`,
  );
  throw new LatticeError(
    'FAILED_PRECONDITION',
    `refusing to serve on ${host}, which is not a loopback address, without auth: ${named.join(', ')}. ` +
      'Configure it, or require client certificates (tls.clientAuth: required, LATTICE_TLS_CLIENT_AUTH), or ' +
      'bind to loopback (LATTICE_HOST=127.0.0.1); to serve without auth on purpose (a private network, a ' +
      'NetworkPolicy), set auth.allowUnauthenticated: true (LATTICE_ALLOW_UNAUTHENTICATED=true).',
    { field: 'host' },
  );
}

/** The ops server's embedded-queue routes, when this process has them: data, with no auth of their own. */
export function embeddedQueueRoutes(settings: Settings): ExposedServer[] {
  return settings.queue.kind === 'memory'
    ? [{ name: 'ops HTTP embedded-queue routes (read, publish, dead letters)', auth: 'none' }]
    : [];
}
