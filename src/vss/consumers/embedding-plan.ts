/**
 * Folds a batch of embedding events into the writes that have the same effect as applying them one
 * by one, in order: per embedding-store row and per point, the net result of that id's events. Each
 * id then gets one write (or a delete followed by one write), so a batch is a few multi-row
 * statements and one upsert per collection, whatever order its ids come in.
 *
 * The rules, for the events of one id in publish order (`→` is "then"):
 * - `D` deletes: whatever came before it no longer matters.
 * - `A` replaces the vector, the search vector and the payload; index flags it names replace those
 *   before it, flags it leaves out keep their value (the store keeps a row's unnamed flags) unless a
 *   `D` came first, in which case the row starts again from nothing (delete, then write).
 * - `P` merges its payload into what is there and its index flags (when sent) into the row's; after a
 *   `D` it finds nothing, so does nothing. Flags a `P` sets before an `A` reach the row only if it
 *   existed: they are written first, as an update, and the `A` upserts over them.
 */
import type { Payload } from '../../platform/vectordb/index.js';
import type { Cluster, EmbeddingRow } from '../store/index.js';
import type { EmbeddingEvent } from './embedding-event.js';
import type { CatalogModel } from './model-catalog.js';

/** A collection points are written to: a model version's, on a cluster's vector DB. */
export interface PointTarget {
  readonly cluster: Cluster;
  readonly collection: string;
  readonly version: number;
}

/** An event the processor accepted, with the collections it writes, by {@link targetKey}. */
export interface PlannedEvent {
  readonly event: EmbeddingEvent;
  readonly model: CatalogModel;
  readonly collections: ReadonlyMap<string, PointTarget>;
}

export const targetKey = (target: Omit<PointTarget, 'version'>): string =>
  `${target.cluster}/${target.collection}`;

/** The writes to one model version's rows of the embedding store. */
export interface StoreWrites {
  readonly model: CatalogModel;
  readonly version: number;
  /** Rows to delete first: deleted ids, and ids a later `A` writes afresh. */
  readonly deletes: string[];
  /** Rows to insert or replace (after the deletes). */
  readonly puts: EmbeddingRow[];
  /** Index flags to set on rows that exist (payload-only events), before the puts: id → variant → flag. */
  readonly flagUpdates: Map<string, Record<string, boolean>>;
}

export interface PointPut {
  readonly vector: Float32Array;
  /** The event payload (merged `P`s included), before the aggregator's attributes. */
  payload: Payload;
  /** The embedding-store version whose row holds the raw index flags. */
  storeVersion: number;
  /** The flags the events sent since the point was (re)written; used when the store row is gone. */
  indexFlags: Record<string, boolean>;
}

export interface PointPayload {
  payload: Payload;
  storeVersion: number;
  indexFlags: Record<string, boolean> | undefined;
}

/** The writes to one collection (one model version on one cluster's vector DB). */
export interface PointWrites {
  readonly cluster: Cluster;
  readonly collection: string;
  readonly version: number;
  readonly model: CatalogModel;
  readonly deletes: string[];
  readonly puts: Map<string, PointPut>;
  /** Payload-only updates of points that may exist. */
  readonly payloads: Map<string, PointPayload>;
}

export interface BatchPlan {
  readonly stores: StoreWrites[];
  readonly collections: PointWrites[];
}

type RowState =
  | { kind: 'delete' }
  | {
      kind: 'put';
      replace: boolean;
      row: EmbeddingRow;
      flags: Record<string, boolean>;
      /** Flags a `P` set before this `A`: they apply to the row only if it existed, so go first. */
      before?: Record<string, boolean>;
    }
  | { kind: 'flags'; flags: Record<string, boolean> };

type PointState =
  | { kind: 'delete' }
  | { kind: 'put'; put: PointPut }
  | { kind: 'payload'; update: PointPayload };

const flagsOf = (event: EmbeddingEvent): Record<string, boolean> =>
  event.indexFlags === undefined ? {} : Object.fromEntries(event.indexFlags);

function foldRow(state: RowState | undefined, event: EmbeddingEvent): RowState | undefined {
  switch (event.operation) {
    case 'D':
      return { kind: 'delete' };
    case 'A': {
      const replace = state?.kind === 'delete' || (state?.kind === 'put' && state.replace);
      const flags = state?.kind === 'put' ? { ...state.flags } : {};
      Object.assign(flags, flagsOf(event));
      const row: EmbeddingRow = { id: event.candidateId, embedding: event.embedding!, toBeIndexed: flags };
      if (event.searchEmbedding !== undefined) row.searchEmbedding = event.searchEmbedding;
      const before = state?.kind === 'flags' ? state.flags : state?.kind === 'put' ? state.before : undefined;
      return before === undefined
        ? { kind: 'put', replace, row, flags }
        : { kind: 'put', replace, row, flags, before };
    }
    case 'P': {
      if (event.indexFlags === undefined || state?.kind === 'delete') return state;
      const flags = state === undefined ? {} : { ...state.flags };
      Object.assign(flags, flagsOf(event));
      if (state?.kind === 'put') return { ...state, row: { ...state.row, toBeIndexed: flags }, flags };
      return { kind: 'flags', flags };
    }
  }
}

function foldPoint(state: PointState | undefined, event: EmbeddingEvent): PointState | undefined {
  switch (event.operation) {
    case 'D':
      return { kind: 'delete' };
    case 'A':
      return {
        kind: 'put',
        put: {
          vector: event.embedding!,
          payload: { ...event.payload },
          storeVersion: event.version,
          indexFlags: flagsOf(event),
        },
      };
    case 'P': {
      if (state?.kind === 'delete') return state;
      if (state?.kind === 'put') {
        Object.assign(state.put.payload, event.payload);
        Object.assign(state.put.indexFlags, flagsOf(event));
        state.put.storeVersion = event.version;
        return state;
      }
      const update: PointPayload = {
        payload: { ...state?.update.payload, ...event.payload },
        storeVersion: event.version,
        indexFlags:
          event.indexFlags === undefined && state?.update.indexFlags === undefined
            ? undefined
            : { ...state?.update.indexFlags, ...flagsOf(event) },
      };
      return { kind: 'payload', update };
    }
  }
}

/** The net writes of `events` (accepted, in publish order). */
export function planBatch(events: readonly PlannedEvent[]): BatchPlan {
  const rows = new Map<string, { model: CatalogModel; version: number; ids: Map<string, RowState> }>();
  const points = new Map<
    string,
    { model: CatalogModel; target: PointTarget; ids: Map<string, PointState> }
  >();
  for (const { event, model, collections } of events) {
    const rowKey = JSON.stringify([event.entity, event.modelName, event.version]);
    let group = rows.get(rowKey);
    if (group === undefined) {
      group = { model, version: event.version, ids: new Map() };
      rows.set(rowKey, group);
    }
    const row = foldRow(group.ids.get(event.candidateId), event);
    if (row !== undefined) group.ids.set(event.candidateId, row);

    for (const [key, pointTarget] of collections) {
      let target = points.get(key);
      if (target === undefined) {
        target = { model, target: pointTarget, ids: new Map() };
        points.set(key, target);
      }
      const point = foldPoint(target.ids.get(event.candidateId), event);
      if (point !== undefined) target.ids.set(event.candidateId, point);
    }
  }

  const stores: StoreWrites[] = [];
  for (const { model, version, ids } of rows.values()) {
    const writes: StoreWrites = { model, version, deletes: [], puts: [], flagUpdates: new Map() };
    for (const [id, state] of ids) {
      if (state.kind === 'delete') writes.deletes.push(id);
      else if (state.kind === 'flags') writes.flagUpdates.set(id, state.flags);
      else {
        if (state.replace) writes.deletes.push(id);
        if (state.before !== undefined) writes.flagUpdates.set(id, state.before);
        writes.puts.push(state.row);
      }
    }
    stores.push(writes);
  }
  const collections: PointWrites[] = [];
  for (const { model, target, ids } of points.values()) {
    const writes: PointWrites = {
      cluster: target.cluster,
      collection: target.collection,
      version: target.version,
      model,
      deletes: [],
      puts: new Map(),
      payloads: new Map(),
    };
    for (const [id, state] of ids) {
      if (state.kind === 'delete') writes.deletes.push(id);
      else if (state.kind === 'put') writes.puts.set(id, state.put);
      else writes.payloads.set(id, state.update);
    }
    collections.push(writes);
  }
  return { stores, collections };
}
