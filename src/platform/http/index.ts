export { HttpServer, type HttpServerOptions, type ReadinessCheck } from './http-server.js';
export { type HttpErrorBody, httpStatusOf, toHttpError } from './status.js';
