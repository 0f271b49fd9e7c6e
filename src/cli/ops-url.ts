import type { LoadedSettings } from '../platform/settings/index.js';
import { httpBaseUrl } from './address-option.js';

/**
 * The base URL of the ops HTTP server (/healthz, /readyz, /metrics, /models, /queue) of a platform
 * running with these settings: `address` when the command was given one (`--address`; a bare
 * HOST:PORT over https when the settings serve TLS), else this machine's: its host (a wildcard bind
 * reached on loopback), its `metrics.port`, https when the settings serve TLS.
 */
export function opsBaseUrl(settings: LoadedSettings, address?: string): string {
  const secure = Boolean(settings.tls.cert);
  if (address !== undefined) return httpBaseUrl(address, secure);
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  return `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${settings.metrics.port}`;
}
