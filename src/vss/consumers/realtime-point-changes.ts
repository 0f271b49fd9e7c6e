/**
 * The payload changes one real-time batch makes to the points of one collection (one model
 * version), computed from what was read, with no I/O:
 *
 * - the attributes the batch applied to the aggregator, on every point of those ids;
 * - for each variant using the collection whose `vss_filter` reads an applied label, its membership
 *   flag `to_be_indexed_<variant>`, recomputed: the raw index flag of the id's embeddings-table row
 *   AND the rule on the point's attributes (the point's payload, which ingestion built as the
 *   event payload over the aggregator row, with the applied values over it). A variant whose rule
 *   reads none of the applied labels keeps its flag; so does an id with no embeddings row (the raw
 *   flag is unknown: it expired or was never written).
 *
 * Ids whose point does not exist (yet) are skipped: the embedding event that creates the point
 * merges the aggregator row then. Fields that already hold the value are not rewritten, and points
 * needing the same change share one `setPayload` call.
 */
import type { Payload } from '../../platform/vectordb/index.js';
import { isMember, membershipFlag } from '../model/index.js';
import type { Attributes } from '../store/index.js';
import { payloadValueFor, samePayloadValue } from './realtime-payload-value.js';
import type { CollectionTarget, VariantUse } from './realtime-targets.js';

/** One `setPayload` call: the same change for every id. */
export interface PayloadGroup {
  readonly ids: string[];
  readonly payload: Payload;
}

/** The variants of the collection whose membership an id's applied labels can change. */
export function variantsToRecompute(target: CollectionTarget, applied: Attributes): VariantUse[] {
  return target.variants.filter(
    (use) => use.rule !== undefined && Object.keys(applied).some((label) => use.rule!.reads.has(label)),
  );
}

/** The payload fields to read from the points: the applied labels, what the rules read, the flags. */
export function payloadFieldsToRead(
  target: CollectionTarget,
  applied: ReadonlyMap<string, Attributes>,
): string[] {
  const fields = new Set<string>();
  for (const labels of applied.values()) {
    for (const label of Object.keys(labels)) fields.add(label);
    for (const use of variantsToRecompute(target, labels)) {
      for (const read of use.rule!.reads) fields.add(read);
      fields.add(membershipFlag(use.variant));
    }
  }
  return [...fields].sort();
}

export interface CollectionState {
  /** Per id: the labels the batch applied, with their values. */
  readonly applied: ReadonlyMap<string, Attributes>;
  /** Per id: the aggregator row after the batch (the base the point's payload sits on). */
  readonly rows: ReadonlyMap<string, Attributes>;
  /** Per id whose point exists: its payload (at least the fields of payloadFieldsToRead). */
  readonly points: ReadonlyMap<string, Payload>;
  /** Per id with an embeddings row in this version: the raw index flag per variant. */
  readonly indexFlags: ReadonlyMap<string, Readonly<Record<string, boolean>>>;
}

export function pointChanges(target: CollectionTarget, state: CollectionState): PayloadGroup[] {
  const groups = new Map<string, PayloadGroup>();
  for (const [id, labels] of state.applied) {
    const point = state.points.get(id);
    if (point === undefined) continue;
    const change: Payload = {};
    const updated: Payload = { ...point };
    for (const [label, text] of Object.entries(labels)) {
      const value = payloadValueFor(text, point[label]);
      updated[label] = value;
      if (!samePayloadValue(point[label], value)) change[label] = value;
    }
    const flags = state.indexFlags.get(id);
    for (const use of variantsToRecompute(target, labels)) {
      const indexFlag = flags?.[use.variant];
      if (indexFlag === undefined) continue;
      const attributes = { ...state.rows.get(id), ...updated };
      const member = isMember(use.rule!, indexFlag, attributes);
      const flag = membershipFlag(use.variant);
      if (point[flag] !== member) change[flag] = member;
    }
    const fields = Object.keys(change).sort();
    if (fields.length === 0) continue;
    const key = JSON.stringify(fields.map((field) => [field, change[field]]));
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { ids: [id], payload: change });
    else group.ids.push(id);
  }
  return [...groups.values()];
}
