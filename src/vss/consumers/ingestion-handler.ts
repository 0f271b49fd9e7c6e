/**
 * The one handler of the ingestion topic, where embedding events and EOF markers travel together
 * (so a partition's marker follows that partition's events). It parses both kinds and applies a
 * batch in runs of one kind, in order: the events before a marker are written (and in the ledger)
 * before the marker is counted, and events after it belong to whatever job comes next.
 */
import type { EmbeddingEvent } from './embedding-event.js';
import type { EmbeddingProcessor } from './embedding-processor.js';
import type { EofMarker } from './eof-marker.js';
import type { EofProcessor } from './eof-processor.js';
import type { EventBatchHandler, EventOutcome } from './event-batch.js';
import { type IngestionMessage, parseIngestionMessage } from './ingestion-message.js';

export class IngestionHandler implements EventBatchHandler<IngestionMessage> {
  readonly kind = 'embedding';

  constructor(
    private readonly embeddings: EmbeddingProcessor,
    private readonly markers: EofProcessor,
  ) {}

  parse(payload: Uint8Array): IngestionMessage {
    return parseIngestionMessage(payload);
  }

  async apply(messages: readonly IngestionMessage[]): Promise<EventOutcome[]> {
    const outcomes: EventOutcome[] = [];
    let start = 0;
    while (start < messages.length) {
      const kind = messages[start]!.kind;
      let end = start;
      while (end < messages.length && messages[end]!.kind === kind) end++;
      const run = messages.slice(start, end);
      if (kind === 'embedding') {
        const events = run.flatMap((m): EmbeddingEvent[] => (m.kind === 'embedding' ? [m.event] : []));
        outcomes.push(...(await this.embeddings.apply(events)));
      } else {
        const markers = run.flatMap((m): EofMarker[] => (m.kind === 'eof' ? [m.marker] : []));
        outcomes.push(...(await this.markers.apply(markers)));
      }
      start = end;
    }
    return outcomes;
  }
}
