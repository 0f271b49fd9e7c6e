/**
 * Scheduled resets by `job_frequency` (FREQ_1H … FREQ_1W): every `scheduleIntervalMs`, a model whose
 * last reset (its newest version's creation) is older than its shortest variant frequency, and which
 * has no unfinished operation, gets a RESET_MODEL (one operation at a time per model).
 *
 * One replica fires: a tick runs in one SQL transaction that first takes the advisory lock
 * `vss_admin_scheduler` with `pg_try_advisory_xact_lock` (released at commit). A replica that does
 * not get it skips the tick; one that ticks after the winner committed finds the reset unfinished
 * (or its version new) and fires nothing. The transaction-scoped lock needs no dedicated connection
 * (the SqlClient port pools them). PGlite supports the same call; with its single connection the
 * transactions of one process are serial anyway, so the lock and the due check in one transaction
 * give the same answer.
 *
 * A model that was never reset is not due: its first load is the operator's reset-model (a schedule
 * firing first would make that request a 409).
 */
import { describeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { JobFrequency, VssStore } from '../../store/index.js';
import { submitReset } from './operations-lifecycle.js';
import type { VectorDbs } from './vector-dbs.js';

const HOUR = 3_600_000;
export const FREQUENCY_MS: Readonly<Record<JobFrequency, number>> = {
  FREQ_1H: HOUR,
  FREQ_3H: 3 * HOUR,
  FREQ_6H: 6 * HOUR,
  FREQ_1D: 24 * HOUR,
  FREQ_1W: 7 * 24 * HOUR,
};

export const SCHEDULER_LOCK = 'vss_admin_scheduler';

export interface ResetSchedulerOptions {
  store: VssStore;
  vectorDbs: VectorDbs;
  operationsTopic: string;
  /** 0 turns scheduling off. */
  intervalMs: number;
  logger: Logger;
  /** The clock, ms since the epoch (tests make a model due without waiting). */
  now: () => number;
  /** Told after a tick queued resets (the relay publishes at once). */
  onQueued: () => void;
}

export class ResetScheduler {
  readonly #o: ResetSchedulerOptions;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<string[]> | undefined;

  constructor(options: ResetSchedulerOptions) {
    this.#o = options;
  }

  start(): void {
    if (this.#o.intervalMs <= 0) return;
    this.#timer = setInterval(() => void this.tick(), this.#o.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#ticking;
  }

  /** One round: the ids of the resets it queued (none when another replica holds the lock). */
  tick(): Promise<string[]> {
    this.#ticking ??= this.#tick()
      .catch((err: unknown) => {
        this.#o.logger.warn({ err: describeError(err) }, 'vss admin: the reset schedule check failed');
        return [];
      })
      .finally(() => {
        this.#ticking = undefined;
      });
    return this.#ticking;
  }

  async #tick(): Promise<string[]> {
    const { store, logger } = this.#o;
    const now = this.#o.now();
    const fired = await store.transaction(async (r) => {
      if (!(await r.operations.tryTransactionLock(SCHEDULER_LOCK))) return [];
      const queued: string[] = [];
      for (const model of await r.models.list()) {
        const variants = await r.variants.list(model);
        if (variants.length === 0) continue;
        const shortest = variants.reduce(
          (best, v) => (FREQUENCY_MS[v.jobFrequency] < FREQUENCY_MS[best] ? v.jobFrequency : best),
          variants[0]!.jobFrequency,
        );
        const latest = await r.versions.latest(model);
        if (latest === undefined || now - latest.createdAt.getTime() < FREQUENCY_MS[shortest]) continue;
        if ((await r.operations.list({ ...model, unfinished: true, limit: 1 })).length > 0) continue;
        try {
          this.#o.vectorDbs.byType(variants);
        } catch (err) {
          logger.warn(
            { entity: model.entity, model: model.modelName, err: describeError(err) },
            'vss admin: scheduled reset skipped',
          );
          continue;
        }
        const accepted = await submitReset(r, this.#o, model, { frequency: shortest, scheduled: true });
        logger.info(
          {
            entity: model.entity,
            model: model.modelName,
            operationId: accepted.operation.operationId,
            frequency: shortest,
          },
          'vss admin: scheduled reset queued',
        );
        queued.push(accepted.operation.operationId);
      }
      return queued;
    });
    if (fired.length > 0) this.#o.onQueued();
    return fired;
  }
}
