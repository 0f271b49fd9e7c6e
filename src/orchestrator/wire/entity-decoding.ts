/**
 * Decoding one legacy `Entity` in time slices. A RetrieveModelScore request is mostly one entity
 * whose `ids` (up to 100,000) the generated `Entity.decode` reads in one call: 30-50 ms on this
 * machine, over 100 ms when cold or while a scavenge runs, holding the event loop from every other
 * call. This reads the same fields with the same reader calls, in the same order, as the generated
 * `Entity.decode` and `EntityFeature.decode` (unknown fields skipped, the last scalar wins, a tag 0 or
 * end-group ends a message, a feature's length read as the generated code reads it), giving the
 * event loop back between slices; tested equal to the generated decoder in
 * test/orchestrator/api/entity-decoding.test.ts.
 */
import type { BinaryReader } from '@bufbuild/protobuf/wire';
import type { Entity, EntityFeature } from '../../gen/orchestrator/v1/orchestrator.js';
import { nextTurn, sliceOver } from '../../platform/scheduling/index.js';
import { boundTo } from './request-columns.js';

/** Fields read between two clock reads. */
const CHECK_EVERY = 1024;

/** The Entity encoded at `[from, to)` of `reader`'s buffer, as `Entity.decode(bytes.subarray(from, to))` gives it. */
export async function decodeEntityInSlices(
  reader: BinaryReader,
  from: number,
  to: number,
  signal: AbortSignal,
  deadline: number,
): Promise<Entity> {
  const r = boundTo(reader, from, to);
  const entity: Entity = { entity: '', ids: [], features: [] };
  let n = 0;
  while (r.pos < to) {
    if (++n % CHECK_EVERY === 0 && sliceOver()) await nextTurn(signal, deadline);
    const tag = r.uint32();
    if (tag === 10) entity.entity = r.string();
    else if (tag === 18) entity.ids.push(r.string());
    else if (tag === 26) {
      // As the generated `EntityFeature.decode(reader, reader.uint32())`: its end is counted from
      // the position after the length, and reads are bounded by the entity's end.
      const length = r.uint32();
      const feature: EntityFeature = { name: '', idsFeatureValue: [] };
      const end = r.pos + length;
      while (r.pos < end) {
        if (++n % CHECK_EVERY === 0 && sliceOver()) await nextTurn(signal, deadline);
        const inner = r.uint32();
        if (inner === 10) feature.name = r.string();
        else if (inner === 18) feature.idsFeatureValue.push(r.string());
        else {
          if ((inner & 7) === 4 || inner === 0) break;
          r.skip(inner & 7);
        }
      }
      entity.features.push(feature);
    } else {
      if ((tag & 7) === 4 || tag === 0) break;
      r.skip(tag & 7);
    }
  }
  return entity;
}
