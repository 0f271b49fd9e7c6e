/**
 * TLS for HTTP: the options of an HTTPS server (HttpServer, the vss admin API) and a `fetch` for
 * clients that trust the settings' CA and present their client certificate. Node's own fetch cannot
 * be given a CA or a client certificate without the undici package, so HTTPS URLs go through
 * `node:https` here and plain HTTP stays on fetch.
 */
import { Agent, request, type ServerOptions } from 'node:https';
import type { ClientTls, ServerTls } from './tls-material.js';
import { serverNameOptions } from './tls-server-name.js';

/** Options of `https.createServer` (and Fastify's `https`) that serve `tls`. */
export function httpsServerOptions(tls: ServerTls): ServerOptions {
  const options: ServerOptions = { cert: tls.cert, key: tls.key };
  if (tls.clientAuth !== 'off') {
    options.ca = tls.clientCa;
    options.requestCert = true;
    // optional: a connection without a trusted certificate is served as one without any.
    options.rejectUnauthorized = tls.clientAuth === 'required';
  }
  return options;
}

/** The part of `fetch` the project's HTTP clients use: string bodies and plain header records. */
export type FetchLike = (
  url: string,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: string | undefined;
    signal?: AbortSignal | undefined;
  },
) => Promise<Response>;

/** Statuses whose Response may carry no body. */
const BODILESS = new Set([101, 204, 205, 304]);

/**
 * A fetch whose HTTPS requests trust `tls.ca` (else the system's roots) and present `tls.cert`;
 * without `tls`, Node's own fetch. Failures reject like fetch's: a TypeError whose `cause` is the
 * socket's or TLS layer's error (with its `code`), or the signal's reason when aborted.
 */
export function fetchWithTls(tls: ClientTls | undefined): FetchLike {
  if (tls === undefined) return fetch;
  const agent = new Agent({
    keepAlive: true,
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    ...(tls.cert === undefined ? {} : { cert: tls.cert, key: tls.key }),
    ...(tls.serverName === undefined ? {} : serverNameOptions(tls.serverName)),
  });
  return (url, init) => {
    if (!url.startsWith('https:')) return fetch(url, init);
    return new Promise<Response>((resolve, reject) => {
      const req = request(url, { method: init.method, headers: init.headers, agent, signal: init.signal });
      req.once('error', (err) =>
        reject(init.signal?.aborted ? init.signal.reason : new TypeError('fetch failed', { cause: err })),
      );
      req.once('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', (err) => reject(new TypeError('fetch failed', { cause: err })));
        res.once('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue;
            for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
          }
          const status = res.statusCode ?? 500;
          resolve(
            new Response(BODILESS.has(status) ? null : Buffer.concat(chunks), {
              status,
              statusText: res.statusMessage ?? '',
              headers,
            }),
          );
        });
      });
      req.end(init.body);
    });
  };
}
