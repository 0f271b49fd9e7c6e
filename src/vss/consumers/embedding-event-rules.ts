/**
 * The limits and spellings an embedding event is held to, and the event both parse it into, shared
 * by its schema (embedding-event.ts) and the hand-written path for plainly valid events
 * (embedding-event-fast-path.ts), so the two cannot disagree on them.
 */
import type { Payload } from '../../platform/vectordb/index.js';
import { membershipFlag } from '../model/index.js';

/** `A` adds or replaces the candidate, `D` deletes it, `P` changes its payload only. */
export type EmbeddingOperation = 'A' | 'D' | 'P';

/** An embedding event as the consumers apply it, whichever shape the producer sent. */
export interface EmbeddingEvent {
  entity: string;
  modelName: string;
  candidateId: string;
  /** The embedding-store version the row is written in. */
  version: number;
  /** The batch job that sent it, when the producer says (a Lattice addition; see ingestion counts). */
  jobId: string | undefined;
  operation: EmbeddingOperation;
  /** `index_space.variants_version_map`: the version (collection) each named variant's point goes to. */
  variantVersions: ReadonlyMap<string, number>;
  /** `index_space.variants_index_map`: each variant's raw index flag; undefined when not sent. */
  indexFlags: ReadonlyMap<string, boolean> | undefined;
  /** The index embedding; always present for `A`. */
  embedding: Float32Array | undefined;
  /** `search_space.embedding`, when sent (queries by this candidate search with it). */
  searchEmbedding: Float32Array | undefined;
  /** `index_space.payload`, when sent; null values are left out (the aggregator's value applies). */
  payload: Payload | undefined;
  /** Identifies the event across redeliveries (a hash of its bytes): the ingestion ledger's key. */
  eventKey: string;
}

/** Values a vector may hold: finite and within float32's range (beyond it would store Infinity). */
export const FLOAT32_MAX = 3.4028234663852886e38;
export const MAX_DIMENSION = 65_536;
export const MAX_VARIANTS = 64;
export const MAX_PAYLOAD_FIELDS = 256;
/** The longest id the vector databases accept. */
export const MAX_CANDIDATE_ID = 1024;
export const VARIANT_KEY = /^[a-z][a-z0-9_]{0,48}$/;
export const PAYLOAD_KEY = /^[A-Za-z0-9_-]{1,128}$/;
/** Payload fields may not be named like membership flags. */
export const FLAG_PREFIX = membershipFlag('');

/** Operations as either shape spells them. */
export const OPERATIONS: Readonly<Record<string, EmbeddingOperation>> = {
  A: 'A',
  D: 'D',
  P: 'P',
  ADD: 'A',
  DELETE: 'D',
  UPSERT_PAYLOAD: 'P',
};
