/**
 * Point ids for Qdrant. Qdrant takes unsigned integers or UUIDs only; the port's ids are any string
 * of 1 to 1,024 characters. Each id maps to a name-based UUID (version 5: SHA-1 of a fixed Lattice
 * namespace and the id's UTF-8 bytes), so the mapping is deterministic across processes and needs no
 * lookup table. The original id travels in a reserved payload field, which searches read to name
 * their hits and which callers never see.
 */
import { createHash } from 'node:crypto';
import { invalidArgument } from '../../errors.js';
import type { Payload } from '../vector-db.js';

/** The payload field holding a point's original id. Callers may neither write nor read it. */
export const ID_FIELD = '__lattice_id';

/** The namespace of Lattice point ids (a fixed random UUID; changing it orphans every stored point). */
const NAMESPACE = Buffer.from('5d0c9e7a1f3b4c62a8e4b07d2c91f6e3', 'hex');

/** The UUID a Lattice id is stored under. */
export function pointUuid(id: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(id, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50; // version 5
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Rejects a caller payload that would overwrite the reserved id field. */
export function assertNoReservedField(payload: Payload, field: string): void {
  if (Object.hasOwn(payload, ID_FIELD)) {
    throw invalidArgument(`${field}.${ID_FIELD} is reserved by the Qdrant adapter`, `${field}.${ID_FIELD}`);
  }
}

/** The stored payload of a point: the caller's fields and the original id. */
export function storedPayload(id: string, payload: Payload): Record<string, unknown> {
  return { ...payload, [ID_FIELD]: id };
}
