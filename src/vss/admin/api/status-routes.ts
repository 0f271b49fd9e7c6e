/**
 * GET /stores, GET /models, GET /models/{entity}/{model} and GET /operations/{id}: the registered
 * stores, current state, versions with their counts, recent operations, and an operation's progress
 * (its payload holds what the steps record, such as the ingestion job's progress and bad rows).
 */
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../../platform/errors.js';
import { type Model, type ModelVersion, resourceName, type Variant } from '../../store/index.js';
import { listedVariantJson, modelJson, operationJson, storeJson, versionJson } from './representations.js';
import { modelParams, operationParams } from './request-schemas.js';
import { ref } from './response-schemas.js';
import { GET_ERRORS, type RouteContext } from './route-context.js';

async function modelWithVariants(
  context: RouteContext,
  model: Model,
  variants: readonly Variant[],
  versions: readonly ModelVersion[],
) {
  const listed = await Promise.all(
    variants.map(async (v) => {
      const served = await context.servedIndex?.(v);
      return {
        ...listedVariantJson(v, versions, context.lifecycle.rollbackGraceMs),
        ...(served === undefined
          ? {}
          : {
              served_index: {
                points: served.points,
                indexed_points: served.indexedPoints,
                degraded: served.degraded,
              },
            }),
      };
    }),
  );
  return { ...modelJson(model), variants: listed };
}

export function statusRoutes(app: FastifyInstance, context: RouteContext): void {
  const { store } = context;

  app.get(
    '/stores',
    {
      schema: {
        summary: 'Every registered store: its entity, database configuration and tables',
        tags: ['status'],
        response: { 200: ref('StoreList'), ...GET_ERRORS },
      },
    },
    async () => ({ stores: (await store.stores.list()).map(storeJson) }),
  );

  app.get(
    '/models',
    {
      schema: {
        summary: 'Every model with its variants: states, versions, clusters and counts',
        tags: ['status'],
        response: { 200: ref('ModelList'), ...GET_ERRORS },
      },
    },
    async () => {
      const [models, variants] = await Promise.all([store.models.list(), store.variants.listAll()]);
      const listed = [];
      for (const model of models) {
        const own = variants.filter((v) => v.entity === model.entity && v.modelName === model.modelName);
        listed.push(await modelWithVariants(context, model, own, await store.versions.list(model)));
      }
      return { models: listed };
    },
  );

  app.get<{ Params: { entity: string; model: string } }>(
    '/models/:entity/:model',
    {
      schema: {
        summary: 'One model with its variants, versions and recent operations',
        tags: ['status'],
        params: modelParams,
        response: { 200: ref('ModelDetail'), ...GET_ERRORS },
      },
    },
    async (request) => {
      const key = {
        entity: resourceName(request.params.entity, 'entity'),
        modelName: resourceName(request.params.model, 'model'),
      };
      const model = await store.models.find(key);
      if (model === undefined) throw notFound(`model ${key.entity}/${key.modelName} does not exist`, 'model');
      const [variants, versions, operations] = await Promise.all([
        store.variants.list(key),
        store.versions.list(key),
        store.operations.list({ ...key, limit: context.recentOperations }),
      ]);
      return {
        ...(await modelWithVariants(context, model, variants, versions)),
        versions: versions.map(versionJson),
        operations: operations.map(operationJson),
      };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/operations/:id',
    {
      schema: {
        summary: 'An operation: status, step, progress, attempts, last error, result and payload',
        tags: ['status'],
        params: operationParams,
        response: { 200: ref('Operation'), ...GET_ERRORS },
      },
    },
    async (request) => {
      const operation = await store.operations.find(request.params.id);
      if (operation === undefined) throw notFound(`operation ${request.params.id} does not exist`, 'id');
      return operationJson(operation);
    },
  );
}
