/**
 * The `ModelLifecycle` of the operations engine: each request records its operation (with the
 * client's idempotency key; a second unfinished operation of a kind on the same target is refused
 * with FAILED_PRECONDITION by the store's one-active index) and the outbox row that queues it, in
 * one SQL transaction, and returns. A reset also allocates its version in that transaction and
 * records `{version, variant_version_map}` as the operation's result, so the answer carries them.
 * Preconditions that the current state decides (a trigger on a variant that is not ingested, a fill
 * of a variant that is not new) are checked in the same transaction, so they cannot race a step.
 */
import { LatticeError, notFound } from '../../../platform/errors.js';
import type {
  JobFrequency,
  JsonObject,
  ModelKey,
  ModelRollback,
  Operation,
  OperationKind,
  VariantKey,
  VssRepositories,
  VssStore,
} from '../../store/index.js';
import type { ModelLifecycle, OperationAccepted, ResetAccepted, SubmitOptions } from '../model-lifecycle.js';
import type { AdminMetrics } from './admin-metrics.js';
import { settleModelState } from './model-state.js';
import { operationEvent } from './operation-worker.js';
import type { StepRegistry } from './step-registry.js';
import { variantVersionMap } from './steps/operation-targets.js';
import { promotableVersion } from './steps/promote-steps.js';
import { refuseSuperseded } from './superseded.js';
import type { VectorDbs } from './vector-dbs.js';

/** The engine's lifecycle: the API's requests, plus the delta load the scheduler and CLI may start. */
export interface AdminLifecycle extends ModelLifecycle {
  /** A delta load (job kind DELTA) into the variants' current write versions; no flip. */
  deltaModel(model: ModelKey, options?: SubmitOptions): Promise<OperationAccepted>;
}

export interface LifecycleOptions {
  store: VssStore;
  vectorDbs: VectorDbs;
  registry: StepRegistry;
  operationsTopic: string;
  /** Told after each commit that queued an event (the relay publishes at once). */
  onQueued: () => void;
  /** See ModelLifecycle.rollbackGraceMs; default 0 (no rollback window). */
  rollbackGraceMs?: number;
  /** Counts rollbacks (`vss_rollbacks_total`). */
  metrics?: AdminMetrics;
}

export class OperationsLifecycle implements AdminLifecycle {
  readonly #o: LifecycleOptions;

  constructor(options: LifecycleOptions) {
    this.#o = options;
  }

  get rollbackGraceMs(): number {
    return this.#o.rollbackGraceMs ?? 0;
  }

  async rollbackModel(
    model: ModelKey,
    options: { reason?: 'manual' | 'live_recall' } = {},
  ): Promise<ModelRollback> {
    const done = await this.#o.store.transaction(async (r) => {
      await r.models.get(model);
      const running = (await r.operations.list({ ...model, unfinished: true }))[0];
      if (running !== undefined) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `model ${model.entity}/${model.modelName} has ${running.kind} operation ${running.operationId} unfinished: roll back once it has finished (or failed)`,
          { field: 'model_name' },
        );
      }
      const rollback = await r.rollBackModel(model, { graceMs: this.rollbackGraceMs });
      await settleModelState(r, model);
      return rollback;
    });
    this.#o.metrics?.rolledBack(model, options.reason ?? 'manual');
    return done;
  }

  async resetModel(
    model: ModelKey,
    options: SubmitOptions & { frequency?: JobFrequency } = {},
  ): Promise<ResetAccepted> {
    return this.#submit((r) => submitReset(r, this.#o, model, options));
  }

  async deltaModel(model: ModelKey, options: SubmitOptions = {}): Promise<OperationAccepted> {
    return this.#submit(async (r) => {
      const variants = await this.#variantsOf(r, model);
      const accepted = await this.#create(r, { ...model, kind: 'DELTA_MODEL' }, options);
      if (!accepted.created) return accepted;
      const map: Record<string, number> = {};
      for (const variant of variants) {
        if (variant.writeVersion === null) {
          throw new LatticeError(
            'FAILED_PRECONDITION',
            `variant ${variant.variant} of model ${model.entity}/${model.modelName} has no version yet: reset the model before a delta`,
          );
        }
        // A reset that failed leaves its version as the write version: the delta goes to the one served.
        const failed =
          variant.readVersion !== null &&
          (await r.versions.get({ ...model, version: variant.writeVersion })).status === 'FAILED';
        map[variant.variant] = failed ? variant.readVersion! : variant.writeVersion;
      }
      const version = Math.max(...Object.values(map));
      return this.#record(r, accepted, { version, variant_version_map: map });
    });
  }

  async triggerModelMachine(variant: VariantKey, options: SubmitOptions = {}): Promise<OperationAccepted> {
    return this.#submit(async (r) => {
      const accepted = await this.#create(r, { ...variant, kind: 'TRIGGER_MODEL_MACHINE' }, options);
      if (!accepted.created) return accepted;
      const current = await r.variants.get(variant);
      const version = current.writeVersion;
      const status = version === null ? undefined : (await r.versions.get({ ...variant, version })).status;
      if (current.state !== 'INGESTED' || (status !== 'INGESTED' && status !== 'SERVING')) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `variant ${variant.variant} of model ${variant.entity}/${variant.modelName} is ${current.state}${version === null ? ' with no write version' : ` on version ${version} (${status})`}: indexing starts once its version is ingested`,
          { field: 'variant' },
        );
      }
      this.#o.vectorDbs.forVariant(current);
      return this.#record(r, accepted, { version, variant_version_map: { [variant.variant]: version } });
    });
  }

  /**
   * Promotion (steps/promote-steps.ts) is accepted when the production vector DB is configured, no
   * other operation of the model is unfinished, and the variants to move are READY on one version
   * with no reset under way (FAILED_PRECONDITION otherwise: the API's 409).
   */
  promoteModel(model: ModelKey, options: SubmitOptions = {}): Promise<OperationAccepted> {
    return this.#submit(async (r) => {
      const current = await r.models.get(model);
      const accepted = await this.#create(r, { ...model, kind: 'PROMOTE_MODEL' }, options);
      if (!accepted.created) return accepted;
      this.#o.vectorDbs.get('production');
      await refuseBusy(r, accepted.operation);
      const experiment = (await r.variants.list(model)).filter((v) => v.cluster === 'experiment');
      if (experiment.length > 0) promotableVersion(current, experiment);
      return this.#record(r, accepted);
    });
  }

  promoteVariant(variant: VariantKey, options: SubmitOptions = {}): Promise<OperationAccepted> {
    return this.#submit(async (r) => {
      const current = await r.variants.get(variant);
      const accepted = await this.#create(r, { ...variant, kind: 'PROMOTE_VARIANT' }, options);
      if (!accepted.created) return accepted;
      this.#o.vectorDbs.get('production', variant.variant);
      await refuseBusy(r, accepted.operation);
      if (current.cluster === 'experiment') promotableVersion(await r.models.get(variant), [current]);
      return this.#record(r, accepted);
    });
  }

  async variantRegistered(
    variant: VariantKey,
    options: SubmitOptions = {},
  ): Promise<OperationAccepted | undefined> {
    return this.#submit(async (r) => {
      const current = await r.variants.get(variant);
      const serving = (await r.variants.list(variant)).filter(
        (v) => v.variant !== variant.variant && v.readVersion !== null,
      );
      if (serving.length === 0) return undefined;
      // The newest version a sibling serves: the one the new variant joins.
      const version = Math.max(...serving.map((v) => v.readVersion!));
      if (current.state !== 'REGISTERED' || current.readVersion !== null) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `variant ${variant.variant} is ${current.state}: only a newly registered variant is filled`,
          { field: 'variant' },
        );
      }
      const accepted = await this.#create(r, { ...variant, kind: 'FILL_VARIANT' }, options);
      if (!accepted.created) return accepted;
      return this.#record(r, accepted, { version, variant_version_map: { [variant.variant]: version } });
    });
  }

  async retryOperation(operationId: string): Promise<OperationAccepted> {
    return this.#submit(async (r) => {
      const operation = await r.operations.get(operationId);
      if (operation.status !== 'FAILED') {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `operation ${operationId} is ${operation.status}: only a FAILED operation can be retried`,
          { field: 'operation_id' },
        );
      }
      await refuseSuperseded(r, operation);
      if (!(await r.operations.retry(operationId))) {
        throw new LatticeError('ABORTED', `operation ${operationId} changed meanwhile: try again`);
      }
      await this.#o.registry.plan(operation.kind)?.onRetry?.(r, operation);
      await settleModelState(r, operation);
      await this.#enqueue(r, operationId);
      return { operation: await r.operations.get(operationId), created: false };
    });
  }

  async #submit<T>(fn: (r: VssRepositories) => Promise<T>): Promise<T> {
    const outcome = await this.#o.store.transaction(fn);
    this.#o.onQueued();
    return outcome;
  }

  async #variantsOf(r: VssRepositories, model: ModelKey) {
    await r.models.get(model);
    const variants = await r.variants.list(model);
    if (variants.length === 0) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `model ${model.entity}/${model.modelName} has no variants: register one first`,
        { field: 'model_name' },
      );
    }
    this.#o.vectorDbs.byType(variants);
    return variants;
  }

  #create(
    r: VssRepositories,
    op: ModelKey & { kind: OperationKind; variant?: string },
    options: SubmitOptions,
    payload?: JsonObject,
  ) {
    return createOperation(r, op, options, payload);
  }

  async #record(
    r: VssRepositories,
    accepted: OperationAccepted,
    result?: JsonObject,
  ): Promise<OperationAccepted> {
    return recordAccepted(r, this.#o.operationsTopic, accepted, result);
  }

  async #enqueue(r: VssRepositories, operationId: string): Promise<void> {
    await r.operations.enqueueOutbox({
      topic: this.#o.operationsTopic,
      key: operationId,
      payload: operationEvent(operationId),
    });
  }
}

async function createOperation(
  r: VssRepositories,
  op: ModelKey & { kind: OperationKind; variant?: string },
  options: SubmitOptions,
  payload?: JsonObject,
): Promise<OperationAccepted> {
  const { entity, modelName, kind, variant } = op;
  return r.operations.create({
    entity,
    modelName,
    kind,
    ...(variant === undefined ? {} : { variant }),
    ...(payload === undefined ? {} : { payload }),
    ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
  });
}

/** For a newly created operation: records its result (if any) and queues its event; returns it fresh. */
async function recordAccepted(
  r: VssRepositories,
  operationsTopic: string,
  accepted: OperationAccepted,
  result?: JsonObject,
): Promise<OperationAccepted> {
  if (!accepted.created) return accepted;
  const id = accepted.operation.operationId;
  if (result !== undefined) await r.operations.setResult(id, result);
  await r.operations.enqueueOutbox({ topic: operationsTopic, key: id, payload: operationEvent(id) });
  return { operation: await r.operations.get(id), created: true };
}

/**
 * Records a reset in the caller's transaction: the operation, the next version, the result
 * `{version, variant_version_map, mq_id, training_data_path}` and the outbox row. The same
 * idempotency key returns the first reset's answer.
 */
export async function submitReset(
  r: VssRepositories,
  options: { vectorDbs: VectorDbs; operationsTopic: string },
  key: ModelKey,
  submit: SubmitOptions & { frequency?: JobFrequency; scheduled?: boolean } = {},
): Promise<ResetAccepted> {
  const model = await r.models.get(key);
  const promoting = (await r.operations.list({ ...key, unfinished: true })).find(
    (op) => op.kind === 'PROMOTE_MODEL' || op.kind === 'PROMOTE_VARIANT',
  );
  if (promoting !== undefined) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `model ${key.entity}/${key.modelName} is being promoted (operation ${promoting.operationId}): reset it once the promotion has finished`,
      { field: 'model_name' },
    );
  }
  const payload: JsonObject = {
    ...(submit.frequency === undefined ? {} : { frequency: submit.frequency }),
    ...(submit.scheduled === true ? { scheduled: true } : {}),
  };
  const accepted = await createOperation(r, { ...key, kind: 'RESET_MODEL' }, submit, payload);
  if (accepted.created) {
    const variants = await r.variants.list(key);
    if (variants.length === 0) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `model ${key.entity}/${key.modelName} has no variants: register one before a reset`,
        { field: 'model_name' },
      );
    }
    options.vectorDbs.byType(variants);
    const { version } = await r.versions.createNext(key);
    const map = Object.fromEntries(variants.map((v) => [v.variant, version]));
    const recorded = await recordAccepted(r, options.operationsTopic, accepted, {
      version,
      variant_version_map: map,
      mq_id: model.mqId,
      training_data_path: model.trainingDataPath,
    });
    return resetAnswer(recorded.operation, true, model.mqId, model.trainingDataPath);
  }
  return resetAnswer(accepted.operation, false, model.mqId, model.trainingDataPath);
}

/** Promotion copies one settled version: refused while another operation of the model is unfinished. */
async function refuseBusy(r: VssRepositories, operation: Operation): Promise<void> {
  const other = (await r.operations.list({ ...operation, unfinished: true })).find(
    (op) => op.operationId !== operation.operationId,
  );
  if (other !== undefined) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `model ${operation.entity}/${operation.modelName} has ${other.kind} operation ${other.operationId} unfinished: promote once it has finished`,
      { field: 'model_name' },
    );
  }
}

function resetAnswer(operation: Operation, created: boolean, mqId: number, path: string): ResetAccepted {
  const version = operation.result?.version;
  if (operation.kind !== 'RESET_MODEL' || typeof version !== 'number') {
    throw notFound(`operation ${operation.operationId} is not a reset`, 'operation_id');
  }
  return {
    operation,
    created,
    version,
    variantVersionMap: variantVersionMap(operation),
    mqId: typeof operation.result?.mq_id === 'number' ? operation.result.mq_id : mqId,
    trainingDataPath:
      typeof operation.result?.training_data_path === 'string' ? operation.result.training_data_path : path,
  };
}
