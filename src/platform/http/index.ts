export {
  API_PREFIX,
  API_WWW_AUTHENTICATE,
  ApiAuth,
  type ApiAuthOptions,
  type ApiCaller,
  apiCallerOf,
  guardApiRoutes,
} from './api-auth.js';
export { defaultServerTls, serveTlsByDefault } from './default-server-tls.js';
export {
  type ApiSession,
  DEFAULT_READINESS_TIMEOUT_MS,
  HttpServer,
  type HttpServerOptions,
} from './http-server.js';
export { type FetchLike, fetchWithTls, httpsServerOptions } from './https-options.js';
export { type ReadinessCheck, readinessWithin } from './readiness.js';
export { type HttpErrorBody, httpStatusOf, toHttpError } from './status.js';
export {
  type ClientAuth,
  type ClientTls,
  loadTls,
  outgoingTls,
  type ServerTls,
  type TlsMaterial,
  type TlsSettings,
  tlsOf,
} from './tls-material.js';
