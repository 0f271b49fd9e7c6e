/**
 * POST /update-variant: what a variant may change while it serves, today its search width
 * (`ef_search`). Registration fields stay as registered (changing them means a new variant); the
 * width is read by serving per search (model/hnsw-params.ts), so the change needs no rebuild and
 * serving applies it as soon as the configuration's NOTIFY reaches it.
 */
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../../platform/errors.js';
import { variantJson } from './representations.js';
import { type UpdateVariantRequest, updateVariantBody } from './request-schemas.js';
import { ref } from './response-schemas.js';
import { POST_ERRORS, postJson, type RouteContext } from './route-context.js';

export function variantSettingsRoutes(app: FastifyInstance, context: RouteContext): void {
  postJson<UpdateVariantRequest>(
    app,
    context,
    '/update-variant',
    {
      summary: "Change a variant's search width (ef_search) live, without a rebuild",
      tags: ['registration'],
      body: updateVariantBody,
      response: { 200: ref('Variant'), ...POST_ERRORS },
    },
    async (body) => {
      const key = { entity: body.entity, modelName: body.model_name, variant: body.variant };
      const updated = await context.store.variants.setEfSearch(key, body.ef_search);
      if (updated === undefined) {
        throw notFound(
          `variant ${key.variant} of model ${key.entity}/${key.modelName} does not exist`,
          'variant',
        );
      }
      return variantJson(updated);
    },
  );
}
