/**
 * Applies EOF markers (an {@link EventBatchHandler}): each is recorded once per (job, partition),
 * and the marker that completes the set (one per partition of the topic) records the version's
 * ingestion complete with its counts, exactly once, in the same transaction (ingestion-repository.ts).
 * The admin reads that record (`store.ingestion.find`) to start indexing.
 */
import { isLatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { IngestionRecord, VssStore } from '../store/index.js';
import { type EofMarker, isEofMarker, parseEofMarker } from './eof-marker.js';
import { type EventBatchHandler, type EventOutcome, RejectedEvent } from './event-batch.js';
import { decodeJsonObject } from './ingestion-message.js';
import { ModelCatalog } from './model-catalog.js';

export interface EofProcessorOptions {
  store: VssStore;
  /** Partitions of the ingestion topic: a job completes when this many partitions sent a marker. */
  partitions: number;
  /** Shared with the embedding processor. Default: a new one. */
  catalog?: ModelCatalog;
  /** Called once per completed job, after its completion is committed. */
  onComplete?: (record: IngestionRecord) => void;
  logger?: Logger;
}

export class EofProcessor implements EventBatchHandler<EofMarker> {
  readonly kind = 'eof';
  readonly #store: VssStore;
  readonly #partitions: number;
  readonly #catalog: ModelCatalog;
  readonly #onComplete: ((record: IngestionRecord) => void) | undefined;
  readonly #logger: Logger | undefined;

  constructor(options: EofProcessorOptions) {
    if (!Number.isInteger(options.partitions) || options.partitions < 1) {
      throw new RangeError(`partitions must be a positive integer, got ${options.partitions}`);
    }
    this.#store = options.store;
    this.#partitions = options.partitions;
    this.#catalog = options.catalog ?? new ModelCatalog(options.store);
    this.#onComplete = options.onComplete;
    this.#logger = options.logger;
  }

  parse(payload: Uint8Array): EofMarker {
    const message = decodeJsonObject(payload);
    if (!isEofMarker(message)) {
      throw new RejectedEvent('not an EOF marker: it needs "eof": true (or candidate_id "EOF")', 'eof');
    }
    return parseEofMarker(message);
  }

  async apply(markers: readonly EofMarker[]): Promise<EventOutcome[]> {
    const since = this.#catalog.now();
    const outcomes: EventOutcome[] = [];
    for (const marker of markers) outcomes.push(await this.#applyOne(marker, since));
    return outcomes;
  }

  async #applyOne(marker: EofMarker, since: number): Promise<EventOutcome> {
    const label = `${marker.entity}/${marker.modelName}`;
    const model = (await this.#catalog.model(marker)) ?? (await this.#catalog.model(marker, since));
    if (model === undefined) return `model ${label} is not registered (field model_name)`;
    try {
      const outcome = await this.#store.ingestion.recordMarker(marker, this.#partitions);
      if (outcome.completed !== undefined) {
        const { counts } = outcome.completed;
        this.#logger?.info(
          {
            entity: marker.entity,
            model: marker.modelName,
            version: marker.version,
            job: marker.jobId,
            counts,
          },
          `ingestion of version ${marker.version} of ${label} (job ${marker.jobId}) is complete`,
        );
        try {
          this.#onComplete?.(outcome.completed);
        } catch (err) {
          // The completion is committed: a failing listener must not make the marker look unapplied.
          this.#logger?.error({ err }, 'an ingestion completion listener failed');
        }
      }
      return undefined;
    } catch (err) {
      // A partition out of range, or a model deleted since: never applicable. Anything else is transient.
      if (isLatticeError(err, 'INVALID_ARGUMENT') || isLatticeError(err, 'NOT_FOUND')) {
        return `${err.message}${err.field === undefined ? '' : ` (field ${err.field})`}`;
      }
      throw err;
    }
  }
}
