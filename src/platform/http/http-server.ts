import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import { LatticeError } from '../errors.js';
import type { Logger } from '../logging/index.js';
import type { Metrics } from '../metrics/index.js';
import { type ApiAuth, apiCallerOf, guardApiRoutes } from './api-auth.js';
import { defaultServerTls } from './default-server-tls.js';
import { httpsServerOptions } from './https-options.js';
import { type ReadinessCheck, readinessWithin } from './readiness.js';
import { toHttpError } from './status.js';
import type { ServerTls } from './tls-material.js';

export interface HttpServerOptions {
  name: string;
  host: string;
  /** 0 picks a free port; `start()` returns the bound one. */
  port: number;
  logger: Logger;
  metrics: Metrics;
  /** Named checks behind /readyz (e.g. `sql`, `queue`). */
  readiness?: Record<string, ReadinessCheck>;
  /**
   * Bound on each readiness check: one that has not answered by then fails /readyz as timed out,
   * so a hung dependency makes the probe answer 503 instead of hanging. Default 2000 ms.
   */
  readinessTimeoutMs?: number;
  bodyLimitBytes?: number;
  /** Serve HTTPS with this; `false` forces plaintext; absent: the process's default (default-server-tls.ts). */
  tls?: ServerTls | false;
  /**
   * Guards the JSON APIs under `/api/` (api-auth.ts) and answers `GET /api/v1/session` with the
   * caller, which the console uses to log in. Absent: no `/api/` routes are guarded.
   */
  apiAuth?: ApiAuth;
  /**
   * Describe the server's routes in an OpenAPI document at `GET /openapi.json` (the console's /docs
   * shows it). Routes are only documented once @fastify/swagger has loaded: build such a server with
   * `HttpServer.create`, which waits for it, and add routes after.
   */
  openapi?: { title: string; description?: string };
}

/** What `GET /api/v1/session` answers: whether auth is on and who the key names. */
export interface ApiSession {
  auth: boolean;
  caller: string;
}

/** The default bound on each /readyz check. */
export const DEFAULT_READINESS_TIMEOUT_MS = 2000;

/**
 * A Fastify app with what every Lattice HTTP server needs: /healthz (the process is up), /readyz (its
 * dependencies answer), /metrics (Prometheus), JSON errors `{ error: { code, message, field } }` from
 * one mapping, request metrics, and a close that finishes in-flight requests.
 */
export class HttpServer {
  readonly app: FastifyInstance;
  private readonly checks: Record<string, ReadinessCheck>;
  /** Whether it serves HTTPS. */
  readonly secure: boolean;

  /**
   * A server whose routes, its own and those added after this resolves, are in its OpenAPI document
   * (`options.openapi`): @fastify/swagger collects routes as they are added, so it must have loaded
   * before the first one.
   */
  static async create(options: HttpServerOptions): Promise<HttpServer> {
    const server = new HttpServer(options);
    await server.app.after();
    return server;
  }

  constructor(private readonly options: HttpServerOptions) {
    this.checks = { ...options.readiness };
    const tls = options.tls === undefined ? defaultServerTls() : options.tls || undefined;
    this.secure = tls !== undefined;
    const bodyLimit = options.bodyLimitBytes ?? 10 * 1024 * 1024;
    // An HTTPS Fastify is typed over https.Server; every route and hook here is the same on both.
    this.app = (
      tls === undefined
        ? Fastify({ logger: false, bodyLimit })
        : Fastify({ logger: false, bodyLimit, https: httpsServerOptions(tls) })
    ) as FastifyInstance;
    if (options.openapi !== undefined) {
      void this.app.register(swagger, {
        openapi: {
          openapi: '3.1.0',
          info: {
            title: options.openapi.title,
            version: '1.0.0',
            description: options.openapi.description ?? '',
          },
          components: {
            securitySchemes: {
              apiKey: {
                type: 'http',
                scheme: 'bearer',
                description: 'A caller token or a vss admin API key; required under /api/ when auth is on.',
              },
            },
          },
          security: [{ apiKey: [] }],
        },
      });
    }
    const requests = options.metrics.counter(
      'http_server_requests_total',
      'HTTP requests, by route and status',
      ['server', 'route', 'status'],
    );
    const latency = options.metrics.timing('http_server_request_seconds', 'HTTP request latency', [
      'server',
      'route',
    ]);
    this.app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      requests.inc({ server: options.name, route, status: String(reply.statusCode) });
      latency.observeMs({ server: options.name, route }, reply.elapsedTime);
    });
    this.app.setErrorHandler(async (err, request, reply) => {
      const { status, body, unexpected } = toHttpError(err);
      if (unexpected) options.logger.error({ err, url: request.url }, 'unexpected error in HTTP handler');
      return reply.status(status).send(body);
    });
    this.app.setNotFoundHandler(async (request, reply) =>
      reply
        .status(404)
        .send({ error: { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url}` } }),
    );
    if (options.apiAuth !== undefined) guardApiRoutes(this.app, options.apiAuth);
    // With an OpenAPI document the routes are added once swagger has loaded, so it sees them.
    if (options.openapi === undefined) this.addRoutes();
    else this.app.after(() => this.addRoutes());
  }

  private addRoutes(): void {
    const options = this.options;
    if (options.openapi !== undefined) {
      this.app.get('/openapi.json', { schema: { hide: true } }, async () => this.app.swagger());
    }
    if (options.apiAuth !== undefined) {
      const apiAuth = options.apiAuth;
      this.app.get(
        '/api/v1/session',
        async (request): Promise<ApiSession> => ({
          auth: apiAuth.enabled,
          caller: apiCallerOf(request).name,
        }),
      );
    }
    this.app.get('/healthz', async () => ({ status: 'ok', service: options.name }));
    this.app.get('/readyz', async (_request, reply) => {
      const results = await this.runChecks();
      const ready = Object.values(results).every((r) => r === 'ok');
      return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks: results });
    });
    this.app.get('/metrics', async (_request, reply) => {
      const { contentType, body } = await options.metrics.scrape();
      return reply.type(contentType).send(body);
    });
  }

  /** Adds a named readiness check (a part that starts later registers its own). */
  addReadinessCheck(name: string, check: ReadinessCheck): void {
    this.checks[name] = check;
  }

  private async runChecks(): Promise<Record<string, string>> {
    const timeoutMs = this.options.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS;
    const entries = await Promise.all(
      Object.entries(this.checks).map(async ([name, check]) => {
        try {
          await readinessWithin(name, timeoutMs, check);
          return [name, 'ok'] as const;
        } catch (err) {
          return [name, err instanceof Error ? err.message : String(err)] as const;
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  async start(): Promise<number> {
    const { host, port, name } = this.options;
    try {
      await this.app.listen({ host, port });
    } catch (err) {
      throw new LatticeError(
        'UNAVAILABLE',
        `${name}: cannot listen on ${host}:${port}: ${(err as Error).message}`,
      );
    }
    const address = this.app.server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    this.options.logger.info(
      { address: `${this.secure ? 'https' : 'http'}://${host}:${bound}` },
      `${name} HTTP listening`,
    );
    return bound;
  }

  /** Stops accepting connections and waits for in-flight requests. */
  async stop(): Promise<void> {
    await this.app.close();
  }
}
