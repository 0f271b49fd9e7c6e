/**
 * What the route modules share: the store and lifecycle they act on, the hooks every POST route
 * carries (JSON-holding fields parsed before validation, Idempotency-Key reservation before the
 * handler) and the error statuses they document.
 */
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
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
