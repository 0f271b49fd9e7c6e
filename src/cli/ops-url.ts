import type { LoadedSettings } from '../platform/settings/index.js';

/**
 * The base URL of the ops HTTP server (/healthz, /readyz, /metrics, /models, /queue) of a platform
 * running on this machine with these settings: its host (a wildcard bind reached on loopback), its
 * `metrics.port`, https when the settings serve TLS.
 */
export function opsBaseUrl(settings: LoadedSettings): string {
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  return `${settings.tls.cert ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${settings.metrics.port}`;
}
