/**
 * The producer's side of the vss topics: an event checked by the very parsers the consumers run
 * (embedding-event.ts, realtime-event.ts), so an event refused here is one the consumers would
 * dead-letter at once, and the key it is published with.
 *
 * - Embedding events are keyed by `candidate_id`: a candidate's events land on one partition and
 *   apply in publish order (an add, then a payload update, then a delete).
 * - Real-time events are keyed by their first candidate id: they spread over the partitions, and
 *   their order needs no key, since updates are ordered by `timestamp` per (id, label) whatever the
 *   arrival order (an event naming no id is keyed by its entity).
 * - EOF markers are refused: they close a job's ingestion and are sent by the admin's jobs to every
 *   partition, never from a file of events.
 */
import { parseEmbeddingEvent } from './embedding-event.js';
import { isEofMarker } from './eof-marker.js';
import { RejectedEvent } from './event-batch.js';
import { decodeJsonObject, eventKeyOf } from './ingestion-message.js';
import { parseRealtimeEvent } from './realtime-event.js';
import type { ConsumerSettings } from './vss-topics.js';

export type VssEventKind = 'realtime' | 'embeddings';

export type CheckedEvent = { ok: true; key: string } | { ok: false; reason: string };

/** The topic events of `kind` are published to. */
export function vssEventTopic(settings: ConsumerSettings, kind: VssEventKind): string {
  return kind === 'embeddings' ? settings.embeddingsTopic : settings.realtimeTopic;
}

/** Checks one event's bytes as the consumers of its topic would parse them; its key when valid. */
export function checkVssEvent(kind: VssEventKind, payload: Uint8Array): CheckedEvent {
  try {
    if (kind === 'realtime') {
      const event = parseRealtimeEvent(payload);
      return { ok: true, key: event.data[0]?.id ?? event.entity };
    }
    const message = decodeJsonObject(payload);
    if (isEofMarker(message)) {
      return {
        ok: false,
        reason:
          'an EOF marker: those are sent by the admin API’s jobs to every partition, not published from a file',
      };
    }
    return { ok: true, key: parseEmbeddingEvent(message, eventKeyOf(payload)).candidateId };
  } catch (err) {
    if (err instanceof RejectedEvent) return { ok: false, reason: err.reason };
    throw err;
  }
}
