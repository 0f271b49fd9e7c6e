export {
  DEFAULT_READINESS_TIMEOUT_MS,
  HttpServer,
  type HttpServerOptions,
  type ReadinessCheck,
  readinessWithin,
} from './http-server.js';
export { type HttpErrorBody, httpStatusOf, toHttpError } from './status.js';
