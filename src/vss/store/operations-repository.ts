/**
 * Operations: every admin operation is recorded here before it is queued, then advanced step by
 * step by admin consumers. Each change is compare-and-set on (status, step), so a redelivered event
 * or a second worker cannot run a step twice. A client's idempotency key returns the first
 * operation again; a second unfinished operation of the same kind on the same model (or variant) is
 * refused (FAILED_PRECONDITION: the 409 of the admin API).
 */
import { randomUUID } from 'node:crypto';
import { isLatticeError, LatticeError, notFound } from '../../platform/errors.js';
import type { SqlQueryable, SqlValue } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import { resourceName, variantName } from './identifiers.js';
import { compareAndSet, json, NOW, type SqlExpression } from './sql-support.js';
import {
  type JsonObject,
  type NewOperation,
  type Operation,
  type OperationKind,
  type OperationStatus,
  VARIANT_OPERATION_KINDS,
} from './types.js';

interface OperationRow {
  operation_id: string;
  kind: OperationKind;
  entity: string;
  model_name: string;
  variant: string | null;
  payload: JsonObject;
  result: JsonObject | null;
  status: OperationStatus;
  step: string | null;
  progress: number;
  attempts: number;
  last_error: string | null;
  idempotency_key: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const columns = `operation_id, kind, entity, model_name, variant, payload, result, status, step, progress,
  attempts, last_error, idempotency_key, created_at, updated_at, started_at, finished_at`;

function toOperation(row: OperationRow): Operation {
  return {
    operationId: row.operation_id,
    kind: row.kind,
    entity: row.entity,
    modelName: row.model_name,
    variant: row.variant,
    payload: row.payload,
    result: row.result,
    status: row.status,
    step: row.step,
    progress: row.progress,
    attempts: row.attempts,
    lastError: row.last_error,
    idempotencyKey: row.idempotency_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

function target(op: { kind: OperationKind; entity: string; modelName: string; variant?: string | null }) {
  const variant = op.variant === undefined || op.variant === null ? '' : ` variant ${op.variant} of`;
  return `${op.kind} on${variant} model ${op.entity}/${op.modelName}`;
}

function progressValue(progress: number): number {
  if (!(Number.isFinite(progress) && progress >= 0 && progress <= 1)) {
    throw new LatticeError('INVALID_ARGUMENT', `progress must be between 0 and 1, got ${progress}`, {
      field: 'progress',
    });
  }
  return progress;
}

export interface CreatedOperation {
  operation: Operation;
  /** False when the idempotency key returned an operation recorded earlier. */
  created: boolean;
}

/** A message of the transactional outbox (migration 8), waiting for the relay or published. */
export interface OutboxMessage {
  outboxId: number;
  topic: string;
  /** The queue key it is published under. */
  key: string;
  payload: JsonObject;
  createdAt: Date;
}

export interface OperationFilter {
  entity?: string;
  modelName?: string;
  /** Only PENDING and RUNNING ones (what a restarted worker resumes). */
  unfinished?: boolean;
  /** Newest first, at most this many (default 100). */
  limit?: number;
}

export class OperationsRepository {
  constructor(private readonly db: SqlQueryable) {}

  /** Records a PENDING operation (see the module comment for keys and conflicts). */
  async create(op: NewOperation): Promise<CreatedOperation> {
    resourceName(op.entity, 'entity');
    resourceName(op.modelName, 'model_name');
    const needsVariant = VARIANT_OPERATION_KINDS.includes(op.kind);
    if (needsVariant && op.variant === undefined) {
      throw new LatticeError('INVALID_ARGUMENT', `${op.kind} needs a variant`, { field: 'variant' });
    }
    if (!needsVariant && op.variant !== undefined) {
      throw new LatticeError('INVALID_ARGUMENT', `${op.kind} acts on a whole model: no variant`, {
        field: 'variant',
      });
    }
    if (op.variant !== undefined) variantName(op.variant);
    // A conflicting operation may finish between the insert and the look-up: try again then.
    for (let attempt = 0; attempt < 3; attempt++) {
      const { rows } = await withConstraintErrors(
        () =>
          this.db.query<OperationRow>(
            `INSERT INTO vss_operations (operation_id, kind, entity, model_name, variant, payload, idempotency_key)
             VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
             ON CONFLICT DO NOTHING
             RETURNING ${columns}`,
            [
              randomUUID(),
              op.kind,
              op.entity,
              op.modelName,
              op.variant ?? null,
              json(op.payload ?? {}),
              op.idempotencyKey ?? null,
            ],
          ),
        {
          missing: {
            vss_operations_model_fkey: {
              field: 'model_name',
              message: `model ${op.entity}/${op.modelName} does not exist`,
            },
            vss_operations_variant_fkey: {
              field: 'variant',
              message: `variant ${op.variant ?? ''} of model ${op.entity}/${op.modelName} does not exist`,
            },
          },
        },
      );
      if (rows[0] !== undefined) return { operation: toOperation(rows[0]), created: true };
      const earlier = await this.#sameKey(op);
      if (earlier !== undefined) return { operation: earlier, created: false };
      const active = await this.#active(op);
      if (active !== undefined) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `${target(op)} is already ${active.status.toLowerCase()} (operation ${active.operationId})`,
        );
      }
    }
    throw new LatticeError('ABORTED', `${target(op)} kept conflicting with other operations: try again`);
  }

  async #sameKey(op: NewOperation): Promise<Operation | undefined> {
    if (op.idempotencyKey === undefined) return undefined;
    const { rows } = await this.db.query<OperationRow>(
      `SELECT ${columns} FROM vss_operations WHERE idempotency_key = $1`,
      [op.idempotencyKey],
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    const earlier = toOperation(row);
    if (
      earlier.kind !== op.kind ||
      earlier.entity !== op.entity ||
      earlier.modelName !== op.modelName ||
      earlier.variant !== (op.variant ?? null)
    ) {
      throw new LatticeError(
        'ALREADY_EXISTS',
        `idempotency key already used by operation ${earlier.operationId} (${target(earlier)})`,
        { field: 'idempotency_key' },
      );
    }
    return earlier;
  }

  async #active(op: NewOperation): Promise<Operation | undefined> {
    const { rows } = await this.db.query<OperationRow>(
      `SELECT ${columns} FROM vss_operations
        WHERE kind = $1 AND entity = $2 AND model_name = $3 AND coalesce(variant, '') = $4
          AND status IN ('PENDING', 'RUNNING')`,
      [op.kind, op.entity, op.modelName, op.variant ?? ''],
    );
    return rows[0] === undefined ? undefined : toOperation(rows[0]);
  }

  async find(operationId: string): Promise<Operation | undefined> {
    const { rows } = await this.db.query<OperationRow>(
      `SELECT ${columns} FROM vss_operations WHERE operation_id = $1`,
      [operationId],
    );
    return rows[0] === undefined ? undefined : toOperation(rows[0]);
  }

  async get(operationId: string): Promise<Operation> {
    const operation = await this.find(operationId);
    if (operation === undefined) throw notFound(`operation ${operationId} does not exist`, 'operation_id');
    return operation;
  }

  async list(filter: OperationFilter = {}): Promise<Operation[]> {
    const params: SqlValue[] = [];
    const where: string[] = [];
    if (filter.entity !== undefined) {
      params.push(filter.entity);
      where.push(`entity = $${params.length}`);
    }
    if (filter.modelName !== undefined) {
      params.push(filter.modelName);
      where.push(`model_name = $${params.length}`);
    }
    if (filter.unfinished === true) where.push(`status IN ('PENDING', 'RUNNING')`);
    params.push(filter.limit ?? 100);
    const { rows } = await this.db.query<OperationRow>(
      `SELECT ${columns} FROM vss_operations
        ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
        ORDER BY created_at DESC, operation_id LIMIT $${params.length}`,
      params,
    );
    return rows.map(toOperation);
  }

  /** PENDING → RUNNING at `step`; false when it was already started. */
  async start(operationId: string, step: string): Promise<boolean> {
    return this.#cas(
      operationId,
      { status: 'PENDING' },
      { status: 'RUNNING', step, started_at: NOW, attempts: { sql: 'attempts + 1' } },
    );
  }

  /** Moves a RUNNING operation from step `from` to `to`; false when another worker already did. */
  async advance(operationId: string, from: string | null, to: string, progress?: number): Promise<boolean> {
    const set: Record<string, SqlValue | SqlExpression> = { step: to };
    if (progress !== undefined) set.progress = progressValue(progress);
    return this.#cas(operationId, { status: 'RUNNING', step: from }, set);
  }

  /** Records progress within the current step of a RUNNING operation. */
  async reportProgress(operationId: string, step: string, progress: number): Promise<boolean> {
    return this.#cas(operationId, { status: 'RUNNING', step }, { progress: progressValue(progress) });
  }

  /** RUNNING at `step` → SUCCEEDED with its result; an error of an earlier attempt no longer applies. */
  async succeed(operationId: string, step: string | null, result?: JsonObject): Promise<boolean> {
    const set: Record<string, SqlValue | SqlExpression> = {
      status: 'SUCCEEDED',
      progress: 1,
      finished_at: NOW,
      last_error: null,
    };
    if (result !== undefined) set.result = json(result);
    return this.#cas(operationId, { status: 'RUNNING', step }, set);
  }

  /** Records what the operation produced so far (the reset's version map, ...) without changing its step. */
  async setResult(operationId: string, result: JsonObject): Promise<void> {
    await this.#cas(operationId, {}, { result: json(result) });
  }

  /** RUNNING (or PENDING) at `step` → FAILED with the error; the step stays for the retry to resume. */
  async fail(
    operationId: string,
    from: { status: 'PENDING' | 'RUNNING'; step: string | null },
    error: string,
  ): Promise<boolean> {
    return this.#cas(
      operationId,
      { status: from.status, step: from.step },
      {
        status: 'FAILED',
        last_error: error,
        finished_at: NOW,
        started_at: { sql: 'coalesce(started_at, now())' },
      },
    );
  }

  /** FAILED → RUNNING at the step it failed in. FAILED_PRECONDITION when another one is active. */
  async retry(operationId: string): Promise<boolean> {
    try {
      return await this.#cas(
        operationId,
        { status: 'FAILED' },
        { status: 'RUNNING', finished_at: null, attempts: { sql: 'attempts + 1' } },
      );
    } catch (err) {
      if (!isLatticeError(err, 'ALREADY_EXISTS')) throw err;
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `operation ${operationId} cannot be retried while another of its kind is unfinished on the same target`,
        { cause: err },
      );
    }
  }

  /**
   * Queues a message in the transactional outbox: written in the caller's transaction (with the
   * operation it announces), published after commit by a relay. Returns its id (ascending).
   */
  async enqueueOutbox(message: { topic: string; key: string; payload: JsonObject }): Promise<number> {
    const { rows } = await withConstraintErrors(() =>
      this.db.query<{ outbox_id: number | string }>(
        `INSERT INTO vss_outbox (topic, message_key, payload) VALUES ($1, $2, $3::jsonb) RETURNING outbox_id`,
        [message.topic, message.key, json(message.payload)],
      ),
    );
    return Number(rows[0]!.outbox_id);
  }

  /** Outbox messages not yet published, oldest first. */
  async unpublishedOutbox(limit = 100): Promise<OutboxMessage[]> {
    const { rows } = await this.db.query<{
      outbox_id: number | string;
      topic: string;
      message_key: string;
      payload: JsonObject;
      created_at: Date;
    }>(
      `SELECT outbox_id, topic, message_key, payload, created_at FROM vss_outbox
        WHERE published_at IS NULL ORDER BY outbox_id LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({
      outboxId: Number(row.outbox_id),
      topic: row.topic,
      key: row.message_key,
      payload: row.payload,
      createdAt: row.created_at,
    }));
  }

  /** Marks outbox messages published (once the queue holds them durably); how many were still unpublished. */
  async markOutboxPublished(outboxIds: readonly number[]): Promise<number> {
    if (outboxIds.length === 0) return 0;
    const { rowCount } = await this.db.query(
      `UPDATE vss_outbox SET published_at = now() WHERE outbox_id = ANY($1::bigint[]) AND published_at IS NULL`,
      [[...outboxIds]],
    );
    return rowCount;
  }

  /**
   * Takes the advisory lock `name` (of this schema) for the rest of the caller's transaction if no
   * other transaction holds it: true when taken. Outside a transaction it is released at once, so
   * call it through `store.transaction`. Used to let one admin replica at a time fire schedules.
   */
  async tryTransactionLock(name: string): Promise<boolean> {
    const { rows } = await this.db.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_xact_lock(hashtext('vss_lock.' || current_schema() || '.' || $1)) AS locked`,
      [name],
    );
    return rows[0]?.locked === true;
  }

  async #cas(
    operationId: string,
    expect: Record<string, SqlValue>,
    set: Record<string, SqlValue | SqlExpression>,
  ): Promise<boolean> {
    const { applied, present } = await withConstraintErrors(() =>
      compareAndSet(this.db, { table: 'vss_operations', key: { operation_id: operationId }, expect, set }),
    );
    if (!present) throw notFound(`operation ${operationId} does not exist`, 'operation_id');
    return applied;
  }
}
