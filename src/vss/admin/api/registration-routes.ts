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
import { POST_ERRORS, postJson, type RouteContext } from './route-context.js';

/**
 * The lifecycle key of a variant's fill: one per variant, so registering it again (a client's retry,
 * even one that lost the first answer) returns the first fill instead of starting another.
 */
export function fillKey(key: VariantKey): string {
  const name = `${key.entity}\u0000${key.modelName}\u0000${key.variant}`;
  return `fill-${createHash('sha256').update(name, 'utf8').digest('hex')}`;
}

type SchemaName = Parameters<typeof ref>[0];

export function registrationRoutes(app: FastifyInstance, context: RouteContext): void {
  const { store, lifecycle } = context;

  /** One POST /register-*: 201 with the resource when `handle` created it, else 200 with the stored one. */
  const registration = <Body>(
    path: string,
    schema: { summary: string; body: unknown; resource: SchemaName; jsonFields?: readonly string[] },
    handle: (body: Body) => Promise<{ created: boolean; json: unknown }>,
  ) =>
    postJson<Body>(
      app,
      context,
      path,
      {
        summary: schema.summary,
        tags: ['registration'],
        body: schema.body,
        response: { 200: ref(schema.resource), 201: ref(schema.resource), ...POST_ERRORS },
        ...(schema.jsonFields === undefined ? {} : { jsonFields: schema.jsonFields }),
      },
      async (body, _request, reply) => {
        const { created, json } = await handle(body);
        return reply.status(created ? 201 : 200).send(json);
      },
    );

  registration<RegisterStoreRequest>(
    '/register-store',
    {
      summary: 'Register the store of an entity (creates its embeddings and aggregator tables)',
      body: registerStoreBody,
      resource: 'Store',
    },
    async (body) => {
      const { resource, created } = await registerStore(store, body);
      return { created, json: storeJson(resource) };
    },
  );

  registration<RegisterModelRequest>(
    '/register-model',
    {
      summary: 'Register a model on its entity’s store',
      body: registerModelBody,
      resource: 'Model',
      jsonFields: JSON_FIELDS.registerModel,
    },
    async (body) => {
      const roots = context.trainingDataRoots;
      if (roots !== undefined) await confineTrainingDataPath(body.training_data_path, roots);
      const { resource, created } = await registerModel(store, body);
      return { created, json: modelJson(resource) };
    },
  );

  registration<RegisterVariantRequest>(
    '/register-variant',
    {
      summary: 'Register a variant of a model (filled from the embedding store when the model has data)',
      body: registerVariantBody,
      resource: 'Variant',
      jsonFields: JSON_FIELDS.registerVariant,
    },
    async (body) => {
      const { resource, created } = await registerVariant(store, body);
      const key: VariantKey = {
        entity: resource.entity,
        modelName: resource.modelName,
        variant: resource.variant,
      };
      // Also on a repeat: a first attempt may have stored the variant and died before this call.
      const fill = await lifecycle.variantRegistered(key, { idempotencyKey: fillKey(key) });
      const json = variantJson(resource);
      if (fill !== undefined) json.fill_operation_id = fill.operation.operationId;
      return { created, json };
    },
  );
}
