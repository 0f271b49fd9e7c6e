/**
 * The vss admin HTTP API (vss.md "Admin HTTP API"): a Fastify app, not yet listening (the
 * composition root binds it to `vss.admin.port`). Every route validates with JSON schemas from which
 * the OpenAPI document at /docs is generated; every failure answers through one mapping
 * (error-mapping.ts); API keys, Idempotency-Key and request metrics are hooks around the routes.
 */
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  DEFAULT_READINESS_TIMEOUT_MS,
  defaultServerTls,
  httpsServerOptions,
  type ReadinessCheck,
  type ServerTls,
} from '../../../platform/http/index.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { Metrics } from '../../../platform/metrics/index.js';
import type { SqlQueryable } from '../../../platform/sql/index.js';
import type { VssStore } from '../../store/index.js';
import type { ModelLifecycle } from '../model-lifecycle.js';
import { AdminApiMetrics } from './admin-api-metrics.js';
import { ApiKeys, OPEN_PATHS, WWW_AUTHENTICATE } from './api-key-auth.js';
import { toErrorAnswer } from './error-mapping.js';
import {
  bodySha256,
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_HEADER,
  IdempotentRequests,
  idempotencyKeyOf,
} from './idempotency.js';
import { operationRoutes } from './operation-routes.js';
import { registrationRoutes } from './registration-routes.js';
import { addResponseSchemas } from './response-schemas.js';
import type { RouteContext } from './route-context.js';
import { serviceRoutes } from './service-routes.js';
import { statusRoutes } from './status-routes.js';
import { variantSettingsRoutes } from './variant-settings-routes.js';

export interface AdminApiOptions {
  store: VssStore;
  lifecycle: ModelLifecycle;
  /** The store's SQL client: /readyz runs `SELECT 1` on it, Idempotency-Key answers live in it. */
  sql: SqlQueryable;
  logger: Logger;
  /** Request metrics are declared on it; /metrics serves its Prometheus text. */
  metrics: Metrics;
  /** `vss.admin.apiKeys`; empty or absent turns authentication off. */
  apiKeys?: readonly string[];
  /** More /readyz checks by name (e.g. `queue`), besides `sql`. */
  readiness?: Readonly<Record<string, ReadinessCheck>>;
  /** Bound on each readiness check (default 2000 ms). */
  readinessTimeoutMs?: number;
  /** Largest request body (default 1 MiB); larger is 413. */
  bodyLimitBytes?: number;
  /** How long an unanswered Idempotency-Key reservation blocks its key (default 60 s). */
  idempotencyLeaseMs?: number;
  /** Operations listed by GET /models/{entity}/{model} (default 20). */
  recentOperations?: number;
  /**
   * The index of the collection a READY variant serves (AdminEngine.servedIndex): listings show it as
   * `served_index`, so a degraded variant says so in its state. Absent: not shown.
   */
  servedIndex?: RouteContext['servedIndex'];
  /**
   * Directories `training_data_path` must lie under (the built-in job runner's roots): register-model
   * and reset-model answer 400 otherwise. Absent: not checked (an external job runner reads the path).
   */
  trainingDataRoots?: readonly string[];
  /** Serve HTTPS with this; `false` forces plaintext; absent: the process's default, as every server. */
  tls?: ServerTls | false;
}

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
const SERVICE = 'vss-admin';

export async function buildAdminApi(options: AdminApiOptions): Promise<FastifyInstance> {
  const tls = options.tls === undefined ? defaultServerTls() : options.tls || undefined;
  const app = Fastify({
    ...(tls === undefined ? {} : { https: httpsServerOptions(tls) }),
    logger: false,
    bodyLimit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    // Long path segments reach the schemas (400 naming the parameter) instead of the router's 414.
    routerOptions: { maxParamLength: 1024 },
    // Errors the router raises before any hook (a bad URL encoding, a longer segment) use the same mapping.
    frameworkErrors: (err, _request, reply) => {
      const answer = toErrorAnswer(err);
      // The router's reply is typed per route generics it does not know; it is a plain reply.
      void (reply as unknown as FastifyReply).status(answer.status).send(answer.body);
    },
    ajv: {
      // Reject what the schemas do not allow instead of repairing it: no silently dropped fields,
      // no "1" taken for 1, and every error reported is the first one found.
      customOptions: {
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: true,
        allErrors: false,
        allowUnionTypes: true,
      },
    },
  });
  // JSON only: any other content type is a 400 naming Content-Type (error-mapping.ts). An empty JSON
  // body is no body (POST /operations/{id}/retry takes none); routes with a body schema then say so.
  app.removeContentTypeParser(['text/plain', 'application/json']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') done(null, undefined);
    else parseJson(request, text, done);
  });

  const apiKeys = new ApiKeys(options.apiKeys ?? []);
  const requests = new IdempotentRequests(
    options.sql,
    options.idempotencyLeaseMs ?? DEFAULT_IDEMPOTENCY_LEASE_MS,
  );
  const metrics = new AdminApiMetrics(options.metrics);
  /** Requests holding an Idempotency-Key reservation → the client's key. */
  const reserved = new WeakMap<FastifyRequest, string>();

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Lattice vss admin API',
        version: '1.0.0',
        description:
          'The vector similarity search model lifecycle: register stores, models and variants, then reset, ' +
          'index, flip and promote them as asynchronous operations. Errors are `{ "error": { "code", ' +
          '"message", "field" } }`. Any POST accepts an `Idempotency-Key` header (at most 256 characters): ' +
          'the first answer is replayed for the same key; the same key with another path or body is 409.',
      },
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description: 'Required when the service has API keys configured (`vss.admin.apiKeys`).',
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  });
  addResponseSchemas(app);

  app.setErrorHandler(async (err, request, reply) => {
    const answer = toErrorAnswer(err);
    if (answer.unexpected) {
      options.logger.error(
        { err, method: request.method, route: request.routeOptions.url },
        'vss admin API request failed',
      );
    }
    if (answer.status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE);
    return reply.status(answer.status).send(answer.body);
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply.status(404).send({
      error: { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.slice(0, 128)}` },
    }),
  );

  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url;
    if (route !== undefined && OPEN_PATHS.has(route)) return;
    apiKeys.check(request.headers.authorization);
  });

  // Idempotency-Key: reserve before the handler runs (see idempotency.ts), record the answer as sent.
  const idempotent: RouteContext['idempotent'] = async (request, reply) => {
    const key = idempotencyKeyOf(request.headers[IDEMPOTENCY_HEADER]);
    if (key === undefined) return;
    const claim = await requests.claim({
      key,
      method: request.method,
      path: request.url.split('?')[0] ?? request.url,
      bodySha256: bodySha256(request.body),
    });
    if (claim.kind === 'replay') {
      await reply.status(claim.status).header('idempotency-replayed', 'true').send(claim.response);
      return;
    }
    reserved.set(request, key);
  };
  app.addHook('onSend', async (request, reply, payload) => {
    const key = reserved.get(request);
    if (key === undefined) return payload;
    reserved.delete(request);
    try {
      if (reply.statusCode >= 500 || typeof payload !== 'string') await requests.release(key);
      else await requests.record(key, reply.statusCode, payload);
    } catch (err) {
      // The answer still goes out; an unrecorded reservation is taken over after its lease.
      options.logger.error({ err }, 'vss admin API could not record an Idempotency-Key answer');
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    metrics.response(request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime);
  });

  const context: RouteContext = {
    store: options.store,
    lifecycle: options.lifecycle,
    idempotent,
    clientKeyOf: (request) => reserved.get(request),
    recentOperations: options.recentOperations ?? 20,
    ...(options.servedIndex === undefined ? {} : { servedIndex: options.servedIndex }),
    ...(options.trainingDataRoots === undefined ? {} : { trainingDataRoots: options.trainingDataRoots }),
  };
  registrationRoutes(app, context);
  variantSettingsRoutes(app, context);
  operationRoutes(app, context);
  statusRoutes(app, context);
  serviceRoutes(app, {
    service: SERVICE,
    sql: options.sql,
    metrics: options.metrics,
    readiness: options.readiness ?? {},
    readinessTimeoutMs: options.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS,
  });
  return app;
}
