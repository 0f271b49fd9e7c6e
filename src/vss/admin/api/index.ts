/**
 * The vss admin HTTP API: `buildAdminApi(options)` returns the Fastify app (not listening) with every
 * route of vss.md "Admin HTTP API", health, readiness, metrics and the OpenAPI document at /docs.
 */

export { type AdminApiOptions, buildAdminApi, DEFAULT_BODY_LIMIT_BYTES } from './admin-api.js';
export { ADMIN_LATENCY_METRIC, ADMIN_RESPONSES_METRIC } from './admin-api-metrics.js';
export { OPEN_PATHS } from './api-key-auth.js';
export { MAX_IDEMPOTENCY_KEY } from './idempotency.js';
