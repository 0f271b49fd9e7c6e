/**
 * A small ModelLifecycle for the admin API's tests: it records operations in the real store (so the
 * GET routes show them, and the store's own rules answer: a second unfinished operation of a kind
 * is FAILED_PRECONDITION, an idempotency key returns the first operation) and remembers each call.
 * The engine that advances operations is tested with its own code; here only the HTTP side counts.
 */
import { LatticeError } from '../../../../src/platform/errors.js';
import type {
  ModelLifecycle,
  OperationAccepted,
  ResetAccepted,
  SubmitOptions,
} from '../../../../src/vss/admin/model-lifecycle.js';
import type {
  JobFrequency,
  ModelKey,
  ModelRollback,
  OperationKind,
  VariantKey,
  VssStore,
} from '../../../../src/vss/store/index.js';

export interface LifecycleCall {
  method: keyof ModelLifecycle;
  key: ModelKey | VariantKey | string;
  options: (SubmitOptions & { frequency?: JobFrequency }) | undefined;
}

export class FakeLifecycle implements ModelLifecycle {
  readonly calls: LifecycleCall[] = [];
  /** Models whose variants get a FILL_VARIANT when registered ("the model already has data"). */
  readonly modelsWithData = new Set<string>();
  /** When set, the next call throws it (once). */
  failNext: Error | undefined;

  constructor(private readonly store: VssStore) {}

  private enter(method: keyof ModelLifecycle, key: LifecycleCall['key'], options: LifecycleCall['options']) {
    this.calls.push({ method, key, options });
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure !== undefined) throw failure;
  }

  private async submit(
    kind: OperationKind,
    key: ModelKey & { variant?: string },
    options: SubmitOptions | undefined,
  ): Promise<OperationAccepted> {
    await this.store.models.get(key);
    if (key.variant !== undefined) await this.store.variants.get(key as VariantKey);
    return this.store.operations.create({
      kind,
      entity: key.entity,
      modelName: key.modelName,
      ...(key.variant === undefined ? {} : { variant: key.variant }),
      payload: { requested_by: 'fake-lifecycle' },
      ...(options?.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    });
  }

  async resetModel(
    model: ModelKey,
    options?: SubmitOptions & { frequency?: JobFrequency },
  ): Promise<ResetAccepted> {
    this.enter('resetModel', model, options);
    const stored = await this.store.models.get(model);
    const accepted = await this.submit('RESET_MODEL', model, options);
    const latest = await this.store.versions.latest(model);
    const version = (latest?.version ?? 0) + 1;
    const variants = await this.store.variants.list(model);
    return {
      ...accepted,
      version,
      variantVersionMap: Object.fromEntries(variants.map((v) => [v.variant, version])),
      mqId: stored.mqId,
      trainingDataPath: stored.trainingDataPath,
    };
  }

  async deltaModel(model: ModelKey, options?: SubmitOptions): Promise<OperationAccepted> {
    this.enter('deltaModel', model, options);
    await this.store.models.get(model);
    return this.submit('DELTA_MODEL', model, options);
  }

  async triggerModelMachine(variant: VariantKey, options?: SubmitOptions): Promise<OperationAccepted> {
    this.enter('triggerModelMachine', variant, options);
    return this.submit('TRIGGER_MODEL_MACHINE', variant, options);
  }

  async promoteModel(model: ModelKey, options?: SubmitOptions): Promise<OperationAccepted> {
    this.enter('promoteModel', model, options);
    return this.submit('PROMOTE_MODEL', model, options);
  }

  async promoteVariant(variant: VariantKey, options?: SubmitOptions): Promise<OperationAccepted> {
    this.enter('promoteVariant', variant, options);
    return this.submit('PROMOTE_VARIANT', variant, options);
  }

  async variantRegistered(
    variant: VariantKey,
    options?: SubmitOptions,
  ): Promise<OperationAccepted | undefined> {
    this.enter('variantRegistered', variant, options);
    if (!this.modelsWithData.has(`${variant.entity}/${variant.modelName}`)) return undefined;
    return this.submit('FILL_VARIANT', variant, options);
  }

  async retryOperation(operationId: string): Promise<OperationAccepted> {
    this.enter('retryOperation', operationId, undefined);
    const operation = await this.store.operations.get(operationId);
    if (operation.status !== 'FAILED') {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `operation ${operationId} is ${operation.status}, not FAILED`,
      );
    }
    await this.store.operations.retry(operationId);
    return { operation: await this.store.operations.get(operationId), created: false };
  }

  readonly rollbackGraceMs = 3_600_000;

  async rollbackModel(model: ModelKey): Promise<ModelRollback> {
    this.enter('rollbackModel', model, undefined);
    return this.store.rollBackModel(model, { graceMs: this.rollbackGraceMs });
  }
}
