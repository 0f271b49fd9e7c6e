/**
 * The routes that start operations: reset-model, trigger-model-machine, promote-model,
 * promote-variant and POST /operations/{id}/retry; and rollback-model, which is done when it answers
 * (one transaction, nothing to wait for: 200 with what it flipped). Each validates, hands the request to the
 * lifecycle (which records the operation and queues it) and answers 202 with the operation id; the
 * work runs asynchronously (GET /operations/{id} follows it). A client's Idempotency-Key is passed on
 * (as `lifecycleKey`), so a retried request returns the first operation.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { resourceName, variantName } from '../../store/index.js';
import { confineTrainingDataPath } from '../jobs/index.js';
import type { OperationAccepted, SubmitOptions } from '../model-lifecycle.js';
import { lifecycleKey } from './idempotency.js';
import {
  type ModelRequest,
  modelBody,
  operationParams,
  type ResetModelRequest,
  resetModelBody,
  type VariantRequest,
  variantBody,
} from './request-schemas.js';
import { ref } from './response-schemas.js';
import { POST_ERRORS, postJson, type RouteContext } from './route-context.js';

function acceptedJson(accepted: OperationAccepted): Record<string, unknown> {
  return {
    operation_id: accepted.operation.operationId,
    status: accepted.operation.status,
    created: accepted.created,
  };
}

function modelKey(body: ModelRequest) {
  return {
    entity: resourceName(body.entity, 'entity'),
    modelName: resourceName(body.model_name, 'model_name'),
  };
}

function variantKey(body: VariantRequest) {
  return { ...modelKey(body), variant: variantName(body.variant, 'variant') };
}

export function operationRoutes(app: FastifyInstance, context: RouteContext): void {
  const { lifecycle, idempotent } = context;
  const submitOptions = (request: FastifyRequest): SubmitOptions => {
    const clientKey = context.clientKeyOf(request);
    return clientKey === undefined ? {} : { idempotencyKey: lifecycleKey(clientKey) };
  };
  const accepted = { 202: ref('OperationAccepted'), ...POST_ERRORS };

  postJson<ResetModelRequest>(
    app,
    context,
    '/reset-model',
    {
      summary: 'Ingest the model into its next version, index it and flip every variant to it',
      description:
        '409 while another reset of the model runs. With model_type DELTA the rows are loaded into the current version instead (no flip).',
      tags: ['operations'],
      body: resetModelBody,
      response: { 202: ref('ResetAccepted'), ...POST_ERRORS },
    },
    async (body, request, reply) => {
      const options = submitOptions(request);
      // A model registered before its path left the roots (or before roots existed) is refused here too.
      const roots = context.trainingDataRoots;
      if (roots !== undefined) {
        const { trainingDataPath } = await context.store.models.get(modelKey(body));
        await confineTrainingDataPath(trainingDataPath, roots);
      }
      if (body.model_type === 'DELTA') {
        const delta = await lifecycle.deltaModel(modelKey(body), options);
        const model = await context.store.models.get(modelKey(body));
        const result = (delta.operation.result ?? {}) as { version?: number; variant_version_map?: object };
        return reply.status(202).send({
          ...acceptedJson(delta),
          variant_version_map: result.variant_version_map ?? {},
          mq_id: model.mqId,
          training_data_path: model.trainingDataPath,
          version: result.version ?? 0,
        });
      }
      const frequency = body.frequency;
      const reset = await lifecycle.resetModel(
        modelKey(body),
        frequency === undefined ? options : { ...options, frequency },
      );
      return reply.status(202).send({
        ...acceptedJson(reset),
        variant_version_map: reset.variantVersionMap,
        mq_id: reset.mqId,
        training_data_path: reset.trainingDataPath,
        version: reset.version,
      });
    },
  );

  // The operations on one model or variant that answer only with the operation.
  const simple = <Body>(
    path: string,
    summary: string,
    body: object,
    submit: (body: Body, options: SubmitOptions) => Promise<OperationAccepted>,
  ) =>
    postJson<Body>(
      app,
      context,
      path,
      { summary, tags: ['operations'], body, response: accepted },
      async (validated, request, reply) =>
        reply.status(202).send(acceptedJson(await submit(validated, submitOptions(request)))),
    );
  simple(
    '/trigger-model-machine',
    'Start indexing a variant whose write version is ingested',
    variantBody,
    (body: VariantRequest, options) => lifecycle.triggerModelMachine(variantKey(body), options),
  );
  simple(
    '/promote-model',
    'Copy the model’s variants to the production cluster and switch serving to it',
    modelBody,
    (body: ModelRequest, options) => lifecycle.promoteModel(modelKey(body), options),
  );
  simple(
    '/promote-variant',
    'Copy one variant to the production cluster and switch its serving to it',
    variantBody,
    (body: VariantRequest, options) => lifecycle.promoteVariant(variantKey(body), options),
  );

  postJson<ModelRequest>(
    app,
    context,
    '/rollback-model',
    {
      summary: 'Flip every variant of the model back to the version it served before its last flip',
      description:
        'Atomically (one transaction: no search sees some variants rolled back and others not), while that version is kept: within its grace period (vss.admin.rollbackGraceMs, default 1 h) after the flip retired it. 409 when no variant has a previous version, when its grace period is over (the version is dropped), or while an operation of the model is unfinished.',
      tags: ['operations'],
      body: modelBody,
      response: { 200: ref('RollbackDone'), ...POST_ERRORS },
    },
    async (body, _request, reply) => {
      const key = modelKey(body);
      const done = await lifecycle.rollbackModel(key, { reason: 'manual' });
      return reply.status(200).send({
        entity: key.entity,
        model_name: key.modelName,
        variants: done.variants.map((v) => ({
          variant: v.variant,
          from_version: v.fromVersion,
          to_version: v.toVersion,
        })),
        retired_versions: done.retiredVersions,
      });
    },
  );

  app.post<{ Params: { id: string } }>(
    '/operations/:id/retry',
    {
      schema: {
        summary: 'Resume a FAILED operation at the step it failed in',
        description:
          'Send no body. 409 when the operation has not failed, or when a later operation made a newer version of its variants serve (superseded: submit a new reset or delta instead).',
        tags: ['operations'],
        params: operationParams,
        response: accepted,
      },
      preHandler: idempotent,
    },
    async (request, reply) =>
      reply.status(202).send(acceptedJson(await lifecycle.retryOperation(request.params.id))),
  );
}
