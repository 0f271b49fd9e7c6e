/**
 * POST /register-store, /register-model, /register-variant: 201 with the resource when new, 200 with
 * the stored one when the same body was registered before (registrations.ts). A new variant is
 * handed to the lifecycle, which fills it from the embedding store when its model already has data.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { VariantKey } from '../../store/index.js';
import { confineTrainingDataPath } from '../jobs/index.js';
import { registerModel, registerStore, registerVariant } from './registrations.js';
import { modelJson, storeJson, variantJson } from './representations.js';
import {
  JSON_FIELDS,
  type RegisterModelRequest,
  type RegisterStoreRequest,
  type RegisterVariantRequest,
  registerModelBody,
  registerStoreBody,
  registerVariantBody,
} from './request-schemas.js';
import { ref } from './response-schemas.js';
import { bodyPreparation, POST_ERRORS, type RouteContext } from './route-context.js';

/**
 * The lifecycle key of a variant's fill: one per variant, so registering it again (a client's retry,
 * even one that lost the first answer) returns the first fill instead of starting another.
 */
export function fillKey(key: VariantKey): string {
  const name = `${key.entity}\u0000${key.modelName}\u0000${key.variant}`;
  return `fill-${createHash('sha256').update(name, 'utf8').digest('hex')}`;
}

export function registrationRoutes(app: FastifyInstance, context: RouteContext): void {
  const { store, lifecycle, idempotent } = context;

  app.post<{ Body: RegisterStoreRequest }>(
    '/register-store',
    {
      schema: {
        summary: 'Register the store of an entity (creates its embeddings and aggregator tables)',
        tags: ['registration'],
        body: registerStoreBody,
        response: { 200: ref('Store'), 201: ref('Store'), ...POST_ERRORS },
      },
      preValidation: bodyPreparation(),
      preHandler: idempotent,
    },
    async (request, reply) => {
      const { resource, created } = await registerStore(store, request.body);
      return reply.status(created ? 201 : 200).send(storeJson(resource));
    },
  );

  app.post<{ Body: RegisterModelRequest }>(
    '/register-model',
    {
      schema: {
        summary: 'Register a model on its entity’s store',
        tags: ['registration'],
        body: registerModelBody,
        response: { 200: ref('Model'), 201: ref('Model'), ...POST_ERRORS },
      },
      preValidation: bodyPreparation(JSON_FIELDS.registerModel),
      preHandler: idempotent,
    },
    async (request, reply) => {
      const roots = context.trainingDataRoots;
      if (roots !== undefined) await confineTrainingDataPath(request.body.training_data_path, roots);
      const { resource, created } = await registerModel(store, request.body);
      return reply.status(created ? 201 : 200).send(modelJson(resource));
    },
  );

  app.post<{ Body: RegisterVariantRequest }>(
    '/register-variant',
    {
      schema: {
        summary: 'Register a variant of a model (filled from the embedding store when the model has data)',
        tags: ['registration'],
        body: registerVariantBody,
        response: { 200: ref('Variant'), 201: ref('Variant'), ...POST_ERRORS },
      },
      preValidation: bodyPreparation(JSON_FIELDS.registerVariant),
      preHandler: idempotent,
    },
    async (request, reply) => {
      const { resource, created } = await registerVariant(store, request.body);
      const key: VariantKey = {
        entity: resource.entity,
        modelName: resource.modelName,
        variant: resource.variant,
      };
      // Also on a repeat: a first attempt may have stored the variant and died before this call.
      const fill = await lifecycle.variantRegistered(key, { idempotencyKey: fillKey(key) });
      const body = variantJson(resource);
      if (fill !== undefined) body.fill_operation_id = fill.operation.operationId;
      return reply.status(created ? 201 : 200).send(body);
    },
  );
}
