/**
 * How the embeddings tables hold vectors: `bytea` of float32 little-endian values, dimension × 4
 * bytes, bit for bit what the Float32Array held (-0, subnormals, infinities and NaN payloads
 * included). Text arrays (`real[]`) cost the database a float parse per value on every write and
 * limited ingestion to ~1,500 events/s (docs/vss.md, "vss embedding ingestion").
 *
 * Writes send a whole statement's vectors as one parameter, back to back, which the statement cuts
 * per row (embeddings-repository.ts); {@link VectorTransport} is how that parameter travels, the one
 * place the adapters differ.
 */
import { endianness } from 'node:os';
import { LatticeError } from '../../platform/errors.js';
import type { SqlClientKind, SqlValue } from '../../platform/sql/index.js';

const littleEndian = endianness() === 'LE';

/** Bytes of a vector as stored: a view of its own memory on little-endian hosts (no copy). */
export function vectorBytes(vector: Float32Array): Uint8Array {
  if (littleEndian) return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
  const bytes = new Uint8Array(vector.byteLength);
  const view = new DataView(bytes.buffer);
  const source = new DataView(vector.buffer, vector.byteOffset, vector.byteLength);
  // Through the integer bits, so a NaN's payload is kept as is.
  for (let i = 0; i < vector.length; i++) view.setUint32(i * 4, source.getUint32(i * 4), true);
  return bytes;
}

/**
 * A stored vector as a Float32Array of its own: always copied, since the driver's bytes may sit at
 * any offset of a shared buffer (a Float32Array needs a multiple of 4) and may be reused.
 */
export function vectorFromBytes(bytes: Uint8Array, column: string): Float32Array {
  if (bytes.byteLength % 4 !== 0) {
    throw new LatticeError(
      'INTERNAL',
      `stored ${column} has ${bytes.byteLength} bytes, not a whole number of float32 values`,
    );
  }
  const vector = new Float32Array(bytes.byteLength / 4);
  if (littleEndian) {
    new Uint8Array(vector.buffer).set(bytes);
    return vector;
  }
  const source = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const target = new DataView(vector.buffer);
  for (let i = 0; i < vector.length; i++) target.setUint32(i * 4, source.getUint32(i * 4, true));
  return vector;
}

/** How vectors travel: a statement's vectors to the database (one `Buffer`, back to back), and back. */
export interface VectorTransport {
  /** The SQL expression, of type bytea, for parameter `param` (`$3`). */
  expression(param: string): string;
  value(vectors: Buffer): SqlValue;
  /** The SQL expression selecting the stored vector column `column`. */
  read(column: string): string;
  /** That expression's value in a result row as bytes (null stays null). */
  bytes(value: unknown): Uint8Array | null;
}

/**
 * PostgreSQL's driver sends a Uint8Array as a binary parameter and reads bytea with Buffer; so does
 * the PGlite adapter for parameters (pglite-sql-client.ts). PGlite reads bytea as hex text, parsed
 * one byte at a time in JavaScript; base64 encoded by the database and read by Buffer is a few times
 * cheaper there (hex is 15% dearer: more text), but on PostgreSQL slower than binary (measured with
 * bench/vss-ingest/store-floor.ts). Base64 text for the parameter too cost PGlite's protocol writer
 * two passes over the text in JavaScript (bench/RESULTS.md, "vss-ingest").
 */
export function vectorTransport(kind: SqlClientKind): VectorTransport {
  return kind === 'pglite' ? BINARY_IN_BASE64_OUT : BINARY;
}

const BINARY: VectorTransport = {
  expression: (param) => `${param}::bytea`,
  value: (vectors) => vectors,
  read: (column) => column,
  bytes: (value) => (value ?? null) as Uint8Array | null,
};

const BINARY_IN_BASE64_OUT: VectorTransport = {
  expression: (param) => `${param}::bytea`,
  value: (vectors) => vectors,
  read: (column) => `encode(${column}, 'base64')`,
  // The database breaks base64 into lines: Buffer skips the line breaks.
  bytes: (value) => (value === null || value === undefined ? null : Buffer.from(value as string, 'base64')),
};
