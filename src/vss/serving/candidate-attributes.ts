/** Attribute resolution: the requested attributes of each returned candidate, as strings. */
import type { Candidate } from '../../gen/vss/v1/vss.js';
import type { VssStore } from '../store/index.js';
import type { PayloadValue, SearchHit } from '../vectordb/index.js';
import type { ServingModel } from './config-repository.js';

/** Requested attributes: the point's payload, overlaid by the aggregator's current values. */
export async function withAttributes(
  store: VssStore,
  model: ServingModel,
  hits: readonly SearchHit[],
  attributes: readonly string[],
): Promise<Candidate[]> {
  const current =
    attributes.length > 0 && hits.length > 0
      ? await store.aggregator.read(
          model.aggregatorTable,
          hits.map((h) => h.id),
          attributes,
        )
      : undefined;
  return hits.map((hit) => {
    const values: Record<string, string> = {};
    for (const name of attributes) {
      const fromPayload = hit.payload?.[name];
      if (fromPayload !== undefined) values[name] = payloadText(fromPayload);
      const fresh = current?.get(hit.id)?.[name];
      if (fresh !== undefined) values[name] = fresh;
    }
    return { id: hit.id, score: hit.score, attributes: values };
  });
}

function payloadText(value: PayloadValue): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}
