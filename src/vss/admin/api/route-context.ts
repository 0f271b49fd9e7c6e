/**
 * What the route modules share: the store and lifecycle they act on, the hooks every POST route
 * carries (JSON-holding fields parsed before validation, Idempotency-Key reservation before the
 * handler) and the error statuses they document.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Variant, VssStore } from '../../store/index.js';
import type { ModelLifecycle } from '../model-lifecycle.js';
import { checkBodyValues, parseJsonFields } from './json-fields.js';
import { errorResponses } from './response-schemas.js';

export interface RouteContext {
  store: VssStore;
  lifecycle: ModelLifecycle;
  /** The POST routes' Idempotency-Key reservation (admin-api.ts). */
  idempotent: preHandlerAsyncHookHandler;
  /** The client's Idempotency-Key of a request that holds its reservation. */
  clientKeyOf(request: FastifyRequest): string | undefined;
  /** How many recent operations GET /models/{entity}/{model} lists. */
  recentOperations: number;
  /** A READY variant's served index (AdminEngine.servedIndex); undefined when not known. */
  servedIndex?: (
    variant: Variant,
  ) => Promise<{ points: number; indexedPoints: number; degraded: boolean } | undefined>;
  /** Where `training_data_path` may point (admin-api.ts); absent: anywhere. */
  trainingDataRoots?: readonly string[];
}

/** Errors every POST route may answer (auth, validation, body size, conflicts, server faults). */
export const POST_ERRORS = errorResponses(400, 401, 404, 409, 413, '5xx');
/** Errors every GET route of the API may answer. */
export const GET_ERRORS = errorResponses(400, 401, 404, '5xx');

/** A POST route's preValidation: parse `jsonFields` given as strings; bound nesting, refuse unstorable text. */
export function bodyPreparation(jsonFields: readonly string[] = []) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    checkBodyValues(request.body);
    parseJsonFields(request.body, jsonFields);
    checkBodyValues(request.body);
  };
}

/** A POST route's OpenAPI schema (the body a JSON Schema, the responses by status). */
export interface PostSchema {
  summary: string;
  description?: string;
  tags: string[];
  body: unknown;
  response: Record<string | number, unknown>;
  /** Body fields that hold JSON and may come as strings (json-fields.ts). */
  jsonFields?: readonly string[];
}

/**
 * Declares a POST route with a JSON body the way every one of the API's is: validated against
 * `schema.body` after its JSON-holding fields are parsed, behind the Idempotency-Key reservation.
 * `handle` gets the body as validated (Fastify's typings cannot carry a generic body type there).
 */
export function postJson<Body>(
  app: FastifyInstance,
  context: Pick<RouteContext, 'idempotent'>,
  path: string,
  schema: PostSchema,
  handle: (body: Body, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
): void {
  const { jsonFields, ...openApi } = schema;
  app.post(
    path,
    {
      schema: openApi,
      preValidation: bodyPreparation(jsonFields),
      preHandler: context.idempotent,
    },
    (request, reply) => handle(request.body as Body, request, reply),
  );
}
