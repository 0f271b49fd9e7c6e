/**
 * One training row → one embedding event in the design's shape (docs/vss.md, "vss embedding
 * ingestion"): the maps and the payload as JSON strings, operation `A`, the job id, keyed by the
 * candidate id. A row the consumers would refuse is a bad row here instead, with its reason, so it
 * is reported against its file and row rather than dead-lettered.
 *
 * Columns: `id_column` (a string, or a non-negative integer taken as its decimal text),
 * `embedding_column` and optional `search_embedding_column` (a list of numbers, or the JSON text of
 * one, `vector_dimension` long, finite within float32), `to_be_indexed_column` (see {@link
 * indexFlags}), and every other column an attribute of `index_space.payload`. The same row always
 * encodes to the same bytes, so a re-run's events are recognised by the consumers' ledger.
 */
import { quote } from '../../../platform/quote.js';
import type { IngestionJob } from './job-runner.js';

export type EncodedRow = { key: string; payload: Buffer } | { bad: string };

const FLOAT32_MAX = 3.4028234663852886e38;
const MAX_ID_LENGTH = 1024;
/** The consumers reserve it for the original system's EOF marker. */
const RESERVED_ID = 'EOF';
const MAX_PAYLOAD_FIELDS = 256;
const PAYLOAD_KEY = /^[A-Za-z0-9_-]{1,128}$/;
const MEMBERSHIP_PREFIX = 'to_be_indexed_';

type PayloadValue = string | number | boolean | string[];

export class EventEncoder {
  readonly #job: IngestionJob;
  readonly #roles: ReadonlySet<string>;
  readonly #variants: readonly string[];
  readonly #prefix: string;
  readonly #middle: string;
  readonly #defaultFlags: string;
  readonly #allTrue: string;
  readonly #allFalse: string;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });

  constructor(job: IngestionJob) {
    this.#job = job;
    const { idColumn, embeddingColumn, toBeIndexedColumn, searchEmbeddingColumn } = job.columns;
    this.#roles = new Set(
      [idColumn, embeddingColumn, toBeIndexedColumn, searchEmbeddingColumn].filter((c) => c !== undefined),
    );
    this.#variants = Object.keys(job.variantVersions).sort();
    const versions = Object.fromEntries(this.#variants.map((v) => [v, job.variantVersions[v]!]));
    this.#prefix = `{"entity":${JSON.stringify(job.entity)},"model_name":${JSON.stringify(job.modelName)},"candidate_id":`;
    this.#middle =
      `,"version":${job.version},"job_id":${JSON.stringify(job.jobId)},"index_space":{"variants_version_map":` +
      JSON.stringify(JSON.stringify(versions)) +
      ',"variants_index_map":';
    this.#defaultFlags = this.#flagsText((variant) => job.indexDefaults[variant] ?? true);
    this.#allTrue = this.#flagsText(() => true);
    this.#allFalse = this.#flagsText(() => false);
  }

  /**
   * Why a file with these columns cannot be ingested at all (an attribute column whose name the
   * payload cannot hold, too many of them), or undefined. For files with a schema (Parquet), so a
   * file-wide problem fails the job once instead of making every row bad.
   */
  checkColumns(columns: readonly string[]): string | undefined {
    const attributes = columns.filter((c) => !this.#roles.has(c));
    for (const column of attributes) {
      const problem = attributeNameProblem(column);
      if (problem !== undefined) return `column ${quote(column)} ${problem}`;
    }
    if (attributes.length > MAX_PAYLOAD_FIELDS) {
      return `${attributes.length} attribute columns, more than the ${MAX_PAYLOAD_FIELDS} a payload holds`;
    }
    return undefined;
  }

  encode(fields: Readonly<Record<string, unknown>>): EncodedRow {
    const { idColumn, embeddingColumn, toBeIndexedColumn, searchEmbeddingColumn } = this.#job.columns;
    const id = candidateId(fields[idColumn]);
    if (typeof id !== 'string') return { bad: `${idColumn}: ${id.bad}` };
    const embedding = this.#vector(fields[embeddingColumn]);
    if (embedding === undefined) return { bad: `${embeddingColumn}: missing embedding` };
    if (typeof embedding !== 'string') return { bad: `${embeddingColumn}: ${embedding.bad}` };
    let search: string | undefined;
    if (searchEmbeddingColumn !== undefined) {
      const vector = this.#vector(fields[searchEmbeddingColumn]);
      if (vector !== undefined && typeof vector !== 'string')
        return { bad: `${searchEmbeddingColumn}: ${vector.bad}` };
      search = vector;
    }
    const flags = this.#indexFlags(fields[toBeIndexedColumn]);
    if (typeof flags !== 'string') return { bad: `${toBeIndexedColumn}: ${flags.bad}` };
    const payload = this.#payload(fields);
    if (payload !== undefined && typeof payload !== 'string') return payload;

    let text = `${this.#prefix}${JSON.stringify(id)}${this.#middle}${flags},"embedding":${embedding},"operation":"A"`;
    if (payload !== undefined) text += `,"payload":${payload}`;
    text += '}';
    if (search !== undefined) text += `,"search_space":{"embedding":${search}}`;
    text += '}';
    return { key: id, payload: Buffer.from(text) };
  }

  /** The vector as JSON text, undefined when absent, or why it cannot be one. */
  #vector(value: unknown): string | undefined | { bad: string } {
    if (value === null || value === undefined) return undefined;
    let values: unknown = value;
    if (typeof values === 'string') {
      try {
        values = JSON.parse(values) as unknown;
      } catch {
        return { bad: 'is text that is not a JSON list of numbers' };
      }
    }
    if (!Array.isArray(values) && !isNumberArray(values)) return { bad: 'must be a list of numbers' };
    const vector = values as ArrayLike<unknown>;
    const dimension = this.#job.vectorDimension;
    if (vector.length !== dimension) {
      return { bad: `has ${vector.length} values, the model's vector_dimension is ${dimension}` };
    }
    let text = '[';
    for (let i = 0; i < vector.length; i++) {
      let x = vector[i];
      if (typeof x === 'bigint') x = Number(x);
      if (typeof x !== 'number' || !Number.isFinite(x) || Math.abs(x) > FLOAT32_MAX) {
        return { bad: `value [${i}] (${String(x)}) is not a finite number within float32 range` };
      }
      if (i > 0) text += ',';
      text += float32Text(x);
    }
    return `${text}]`;
  }

  /**
   * `variants_index_map` (as its JSON-string text) from the row's `to_be_indexed_column`: absent or
   * null → the job's defaults; a boolean (or 0/1, "true"/"false") → that flag for every variant of
   * the job; an object (or its JSON text) of variant → flag → those flags, the job's defaults for
   * variants it leaves out (variants the job does not write are ignored); a list of variant names →
   * true for those, false for the rest.
   */
  #indexFlags(value: unknown): string | { bad: string } {
    if (value === null || value === undefined) return this.#defaultFlags;
    let flags: unknown = value;
    if (typeof flags === 'string' && /^\s*[[{]/.test(flags)) {
      try {
        flags = JSON.parse(flags) as unknown;
      } catch {
        return { bad: 'is text that is not JSON' };
      }
    }
    const flag = booleanOf(flags);
    if (flag !== undefined) return flag ? this.#allTrue : this.#allFalse;
    if (Array.isArray(flags)) {
      if (!flags.every((v) => typeof v === 'string')) return { bad: 'a list must hold variant names' };
      const listed = new Set(flags);
      return this.#flagsText((variant) => listed.has(variant));
    }
    if (
      typeof flags === 'object' &&
      flags !== null &&
      !ArrayBuffer.isView(flags) &&
      !(flags instanceof Date)
    ) {
      const map = flags as Record<string, unknown>;
      for (const [variant, raw] of Object.entries(map)) {
        if (raw !== null && booleanOf(raw) === undefined) {
          return { bad: `${quote(variant)} must be a boolean, got ${quote(String(raw))}` };
        }
      }
      return this.#flagsText((variant) => {
        const raw = map[variant];
        return raw === null || raw === undefined
          ? (this.#job.indexDefaults[variant] ?? true)
          : booleanOf(raw)!;
      });
    }
    return {
      bad: `must be a boolean (or 0/1, "true"/"false"), an object of variant → boolean, or a list of variant names`,
    };
  }

  #flagsText(flagOf: (variant: string) => boolean): string {
    return JSON.stringify(JSON.stringify(Object.fromEntries(this.#variants.map((v) => [v, flagOf(v)]))));
  }

  /** `index_space.payload` (as its JSON-string text) from the row's other columns; undefined when empty. */
  #payload(fields: Readonly<Record<string, unknown>>): string | undefined | { bad: string } {
    let payload: Record<string, PayloadValue> | undefined;
    let count = 0;
    for (const column in fields) {
      if (this.#roles.has(column)) continue;
      const raw = fields[column];
      if (raw === null || raw === undefined) continue;
      const problem = attributeNameProblem(column);
      if (problem !== undefined) return { bad: `column ${quote(column)} ${problem}` };
      const value = this.#attribute(raw);
      if (typeof value === 'object' && !Array.isArray(value)) return { bad: `${column}: ${value.bad}` };
      if (++count > MAX_PAYLOAD_FIELDS) {
        return { bad: `more than ${MAX_PAYLOAD_FIELDS} attributes (a payload's limit)` };
      }
      payload ??= {};
      payload[column] = value;
    }
    return payload === undefined ? undefined : JSON.stringify(JSON.stringify(payload));
  }

  /** A cell as a payload value: text, a finite number, a boolean or a list of texts. */
  #attribute(value: unknown): PayloadValue | { bad: string } {
    switch (typeof value) {
      case 'string':
      case 'boolean':
        return value;
      case 'number':
        return Number.isFinite(value) ? value : { bad: `${value} is not a finite number` };
      case 'bigint':
        return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
    }
    if (value instanceof Date) return value.toISOString();
    if (value instanceof Uint8Array) {
      try {
        return this.#decoder.decode(value);
      } catch {
        return { bad: 'binary value that is not UTF-8 text' };
      }
    }
    if (Array.isArray(value) || isNumberArray(value)) {
      const items: string[] = [];
      for (const item of Array.from(value as ArrayLike<unknown>)) {
        if (item === null || item === undefined) continue;
        if (typeof item === 'object') return { bad: 'a list of lists or objects cannot be an attribute' };
        items.push(String(item));
      }
      return items;
    }
    return { bad: 'an object cannot be an attribute (flatten it into columns)' };
  }
}

/**
 * A number as decimal text that reads back as its float32, the value the consumers store: 9
 * significant digits always round-trip a float32 and are cheaper to write and to parse than the 17
 * the float32 needs as a double (`0.123456791`, not `0.12345679104328156`). Rounding to float32
 * first makes the text store exactly what the original number would have (no double rounding).
 */
function float32Text(x: number): string {
  const f = Math.fround(x);
  if (f === 0) return 1 / f < 0 ? '-0' : '0';
  return f.toPrecision(9);
}

function isNumberArray(value: unknown): value is ArrayLike<number | bigint> {
  return ArrayBuffer.isView(value) && !(value instanceof DataView) && !(value instanceof Uint8Array);
}

function candidateId(value: unknown): string | { bad: string } {
  if (value === null || value === undefined || value === '') return { bad: 'missing id' };
  if (typeof value === 'string') {
    if (value.length > MAX_ID_LENGTH) return { bad: `id longer than ${MAX_ID_LENGTH} characters` };
    if (value.includes('\u0000')) return { bad: 'id contains NUL' };
    if (value === RESERVED_ID) return { bad: `id "${RESERVED_ID}" is reserved for end-of-file markers` };
    return value;
  }
  if (
    (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) ||
    (typeof value === 'bigint' && value >= 0n)
  ) {
    return value.toString();
  }
  return { bad: `id must be text or a non-negative integer, got ${quote(String(value))}` };
}

function booleanOf(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1 || value === 0n || value === 1n) return Number(value) === 1;
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (text === 'true' || text === '1') return true;
    if (text === 'false' || text === '0') return false;
  }
  return undefined;
}

function attributeNameProblem(column: string): string | undefined {
  if (!PAYLOAD_KEY.test(column)) {
    return 'cannot be a payload attribute (names are 1-128 letters, digits, "_" or "-"); rename it in the data';
  }
  if (column.startsWith(MEMBERSHIP_PREFIX)) {
    return `cannot be a payload attribute (${MEMBERSHIP_PREFIX}* flags are computed from the index flags and vss_filter)`;
  }
  return undefined;
}
