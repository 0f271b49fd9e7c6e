/**
 * What the admin HTTP API asks of the operations engine: the state-changing requests of vss.md
 * ("Admin HTTP API") that run as operations. Each call records its operation and the outbox row that
 * queues it in one SQL transaction and returns at once; admin consumers then advance the operation
 * step by step (operations/). The HTTP layer only validates, authenticates and maps errors; it never
 * changes lifecycle state itself.
 *
 * Errors are LatticeErrors: NOT_FOUND (unknown model, variant or operation), FAILED_PRECONDITION
 * (not allowed in the current state, e.g. a reset while one runs: the API's 409), ALREADY_EXISTS
 * (an idempotency key reused for another request: 409), INVALID_ARGUMENT with its field (400).
 */
import type { JobFrequency, ModelKey, ModelRollback, Operation, VariantKey } from '../store/index.js';

export interface SubmitOptions {
  /** A client's `Idempotency-Key`: the same key again returns the first operation, nothing new runs. */
  idempotencyKey?: string;
}

export interface OperationAccepted {
  operation: Operation;
  /** False when the idempotency key returned an operation recorded earlier. */
  created: boolean;
}

/** The reset's answer (vss.md): what it will write, known when it is accepted. */
export interface ResetAccepted extends OperationAccepted {
  /** The version the reset fills (allocated in the accepting transaction). */
  version: number;
  /** Each variant of the model → the version its points are written to. */
  variantVersionMap: Record<string, number>;
  mqId: number;
  trainingDataPath: string;
}

export interface ModelLifecycle {
  /** A full ingestion into the next version, then indexing and an atomic flip of every variant. */
  resetModel(model: ModelKey, options?: SubmitOptions & { frequency?: JobFrequency }): Promise<ResetAccepted>;
  /**
   * A delta load: the job's events go into the variants' current write version, no new version and no
   * flip (the original's DELTA model type). The operation's result holds `version` and
   * `variant_version_map`.
   */
  deltaModel(model: ModelKey, options?: SubmitOptions): Promise<OperationAccepted>;
  /** Starts indexing for a variant whose write version is ingested. */
  triggerModelMachine(variant: VariantKey, options?: SubmitOptions): Promise<OperationAccepted>;
  /** Copies the model's variants to the production cluster and switches serving to it. */
  promoteModel(model: ModelKey, options?: SubmitOptions): Promise<OperationAccepted>;
  /** Copies one variant to the production cluster and switches its serving to it. */
  promoteVariant(variant: VariantKey, options?: SubmitOptions): Promise<OperationAccepted>;
  /**
   * Called after register-variant stored a new variant: when its model already has data, starts the
   * FILL_VARIANT operation (membership from the embedding store, no re-ingestion) and returns it.
   */
  variantRegistered(variant: VariantKey, options?: SubmitOptions): Promise<OperationAccepted | undefined>;
  /** FAILED → resumes at the step it failed in (`POST /operations/{id}/retry`). */
  retryOperation(operationId: string): Promise<OperationAccepted>;
  /**
   * Flips every READY variant of the model back to the version it served before its last flip, in
   * one transaction (not an operation: nothing to wait for). FAILED_PRECONDITION when an operation
   * of the model is unfinished, when there is no previous version, or when its grace period
   * (`rollbackGraceMs`) is over. `reason` labels the `vss_rollbacks_total` metric.
   */
  rollbackModel(model: ModelKey, options?: { reason?: 'manual' | 'live_recall' }): Promise<ModelRollback>;
  /** How long a version is kept for a rollback after its variants flipped away from it, ms. */
  readonly rollbackGraceMs: number;
}
