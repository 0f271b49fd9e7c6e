/**
 * A message of the ingestion topic, decoded: embedding events and EOF markers travel on the same
 * topic (so a partition's marker follows that partition's events) and are told apart here.
 */
import * as crypto from 'node:crypto';
import { liftEmbeddingArrays } from './embedding-array-lift.js';
import { type EmbeddingEvent, parseEmbeddingEvent } from './embedding-event.js';
import { plainEmbeddingEvent } from './embedding-event-fast-path.js';
import { type EofMarker, isEofMarker, parseEofMarker } from './eof-marker.js';
import { RejectedEvent } from './event-batch.js';

export type IngestionMessage =
  | { readonly kind: 'embedding'; readonly event: EmbeddingEvent }
  | { readonly kind: 'eof'; readonly marker: EofMarker };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The payload as a JSON object; RejectedEvent when it is not UTF-8 JSON text of an object. */
export function decodeJsonObject(payload: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    text = utf8.decode(payload);
  } catch {
    throw new RejectedEvent('the message is not UTF-8 text');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new RejectedEvent(`the message is not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RejectedEvent('the message must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** One-shot hashing (Node 20.12 and later) skips a Hash object per event; the same digest. */
const sha256Hex: (bytes: Uint8Array) => string =
  typeof crypto.hash === 'function'
    ? (bytes) => crypto.hash('sha256', bytes, 'hex')
    : (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

/**
 * The event's identity across redeliveries: 128 bits of SHA-256 over its bytes. A redelivered
 * message has the same bytes; so does a producer's exact re-send, which counts once, as it should.
 */
export function eventKeyOf(payload: Uint8Array): string {
  return sha256Hex(payload).slice(0, 32);
}

/** Decodes and validates one message of the ingestion topic; throws RejectedEvent naming the field. */
export function parseIngestionMessage(payload: Uint8Array): IngestionMessage {
  const lifted = liftEmbeddingArrays(payload);
  if (lifted !== undefined && !isEofMarker(lifted)) {
    // Only the plain path takes lifted vectors; any other event is decoded again in full below.
    const event = plainEmbeddingEvent(lifted, eventKeyOf(payload));
    if (event !== undefined) return { kind: 'embedding', event };
  }
  const message = decodeJsonObject(payload);
  if (isEofMarker(message)) return { kind: 'eof', marker: parseEofMarker(message) };
  return { kind: 'embedding', event: parseEmbeddingEvent(message, eventKeyOf(payload)) };
}
