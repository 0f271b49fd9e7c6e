/**
 * The real-time aggregation processor: the `EventBatchHandler` of real-time events (event-batch.ts).
 * For each entity of a batch, in this order:
 *
 * 1. the entity's aggregator rows, in one statement: a column per label (added on first sight),
 *    each (id, label) taking the newest value by event timestamp, never an older one than the row
 *    holds (AggregatorRepository.upsertLatest);
 * 2. for every model of the entity and every collection its variants read or, during a reset, write
 *    (realtime-targets.ts): the applied attributes and recomputed membership flags on the points that
 *    exist (realtime-point-changes.ts), read with one `getPoints` per collection and one embeddings
 *    query per model version, written with one `setPayload` per distinct change.
 *
 * Every write is idempotent (an upsert by key, a payload set to a value), so a batch applied twice
 * has the effect of applying it once. An entity without a store rejects its events for good; a SQL
 * or vector DB failure throws, and the runner retries the batch.
 */
import { isLatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { Payload, StoredPoint, VectorDb } from '../../platform/vectordb/index.js';
import { ClusterVectorDbs, collectionName } from '../model/index.js';
import type { Attributes, StoredEmbedding, TimedAttributeUpdate, VssRepositories } from '../store/index.js';
import type { EventBatchHandler, EventOutcome } from './event-batch.js';
import { parseRealtimeEvent, type RealtimeEvent } from './realtime-event.js';
import {
  type CollectionState,
  payloadFieldsToRead,
  pointChanges,
  variantsToRecompute,
} from './realtime-point-changes.js';
import { type CollectionTarget, type EntityTargets, loadEntityTargets } from './realtime-targets.js';

export interface RealtimeProcessorOptions {
  /** The vss store (or repositories bound to one connection). */
  store: VssRepositories;
  /** The experiment cluster's vector DB. */
  vectorDb: VectorDb;
  /** Vector DBs by cluster; default `vectorDb` alone, as experiment (production collections are then skipped). */
  vectorDbs?: ClusterVectorDbs;
  logger?: Logger;
}

/** What the processor has written since it started, for metrics and tests. */
export interface RealtimeTotals {
  /** Aggregator (id, label) values written. */
  attributesApplied: number;
  /** Points whose payload was changed, summed over collections. */
  pointsUpdated: number;
}

export class RealtimeProcessor implements EventBatchHandler<RealtimeEvent> {
  readonly kind = 'realtime';
  /** Totals since start (the runner's metrics read them). */
  readonly totals: RealtimeTotals = { attributesApplied: 0, pointsUpdated: 0 };

  readonly #vectorDbs: ClusterVectorDbs;

  constructor(private readonly options: RealtimeProcessorOptions) {
    this.#vectorDbs = options.vectorDbs ?? ClusterVectorDbs.single(options.vectorDb);
  }

  parse(payload: Uint8Array): RealtimeEvent {
    return parseRealtimeEvent(payload);
  }

  async apply(events: readonly RealtimeEvent[]): Promise<EventOutcome[]> {
    const outcomes: EventOutcome[] = events.map(() => undefined);
    const byEntity = new Map<string, number[]>();
    events.forEach((event, i) => {
      const indexes = byEntity.get(event.entity);
      if (indexes === undefined) byEntity.set(event.entity, [i]);
      else indexes.push(i);
    });
    for (const [entity, indexes] of byEntity) {
      const targets = await loadEntityTargets(this.options.store, entity, this.options.logger);
      if (targets === undefined) {
        const reason = `unknown entity ${JSON.stringify(entity)}: it has no store (register one with /register-store)`;
        for (const i of indexes) outcomes[i] = reason;
        continue;
      }
      await this.applyToEntity(
        targets,
        indexes.map((i) => events[i]!),
      );
    }
    return outcomes;
  }

  /** Applies one entity's events (in batch order, which breaks timestamp ties: the later wins). */
  private async applyToEntity(targets: EntityTargets, events: readonly RealtimeEvent[]): Promise<void> {
    const updates: TimedAttributeUpdate[] = [];
    for (const event of events) {
      for (const entry of event.data) updates.push({ ...entry, timestamp: event.timestamp });
    }
    if (updates.length === 0) return;
    const written = await this.options.store.aggregator.upsertLatest(targets.store.aggregatorTable, updates);
    const applied = new Map<string, Attributes>();
    const rows = new Map<string, Attributes>();
    let attributesApplied = 0;
    for (const [id, row] of written) {
      const labels = Object.keys(row.applied).length;
      if (labels === 0) continue;
      attributesApplied += labels;
      applied.set(id, row.applied);
      rows.set(id, row.attributes);
    }
    this.totals.attributesApplied += attributesApplied;
    if (applied.size === 0) return;
    const entity = targets.store.entity;
    const updated = await Promise.all(
      targets.collections.map((target) =>
        this.updateCollection(entity, targets.store.embeddingsTable, target, applied, rows),
      ),
    );
    for (const points of updated) this.totals.pointsUpdated += points;
  }

  /** Reads what the changes depend on, then writes them; the number of points changed. */
  private async updateCollection(
    entity: string,
    embeddingsTable: string,
    target: CollectionTarget,
    applied: ReadonlyMap<string, Attributes>,
    rows: ReadonlyMap<string, Attributes>,
  ): Promise<number> {
    const { store } = this.options;
    const cluster = target.cluster ?? 'experiment';
    if (!this.#vectorDbs.has(cluster)) return 0;
    const vectorDb = this.#vectorDbs.of(cluster);
    const collection = collectionName(entity, target.modelName, target.version);
    const ids = [...applied.keys()];
    const flagIds = ids.filter((id) => variantsToRecompute(target, applied.get(id)!).length > 0);
    const noRows = new Map<string, StoredEmbedding>();
    let stored: (StoredPoint | undefined)[];
    let flags: Map<string, StoredEmbedding>;
    try {
      [stored, flags] = await Promise.all([
        vectorDb.getPoints(collection, ids, {
          withVector: false,
          withPayload: payloadFieldsToRead(target, applied),
        }),
        flagIds.length === 0
          ? noRows
          : store.embeddings.read(embeddingsTable, {
              modelName: target.modelName,
              version: target.version,
              ids: flagIds,
            }),
      ]);
    } catch (err) {
      // A version whose collection is not created yet (or was just dropped) has no points to update.
      if (isLatticeError(err, 'NOT_FOUND') && err.field === 'collection') return 0;
      throw err;
    }
    const points = new Map<string, Payload>();
    stored.forEach((point, i) => {
      if (point !== undefined) points.set(ids[i]!, point.payload ?? {});
    });
    const state: CollectionState = {
      applied,
      rows,
      points,
      indexFlags: new Map([...flags].map(([id, row]) => [id, row.toBeIndexed])),
    };
    let changed = 0;
    for (const group of pointChanges(target, state)) {
      try {
        changed += await vectorDb.setPayload(collection, group.ids, group.payload);
      } catch (err) {
        if (isLatticeError(err, 'NOT_FOUND') && err.field === 'collection') return changed;
        throw err;
      }
    }
    return changed;
  }
}
