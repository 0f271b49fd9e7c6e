/**
 * Decoding a large message without holding the event loop: a 2 MB request of 100,000 targets takes
 * about 110 ms to decode in one call (an object per target and value), and four such requests at
 * once starve every small request on the process for half a second. The bulk of such a message is
 * one or a few repeated message fields at the top level (targets, pairs, slates, entities), so this
 * walks the top-level fields, decodes each element of those fields with the generated element
 * decoder (or hands its bounds to the caller's own decoder, a {@link RepeatedSink}: columns instead
 * of an object per element), and gives the event loop back between slices (platform/scheduling).
 * The other top-level fields are copied, in order, into one small buffer the generated message
 * decoder reads, and the element lists are set on its result: the same message as one generated
 * `decode` of the whole buffer for well-formed bytes (protobuf concatenation semantics; tested for
 * equality in test/platform/protobuf and test/orchestrator/api).
 */
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { nextTurn, sliceOver } from '../scheduling/index.js';
import { eachField, type Visit } from './field-scan.js';

/** A repeated message field decoded element by element: its field number and the property it fills. */
export interface RepeatedElements {
  field: number;
  property: string;
  decode: (bytes: Uint8Array) => unknown;
}

/**
 * A repeated message field whose elements the caller takes itself (into columns, say) instead of a
 * list on the message: `take` gets each element's bounds in the message bytes, and may decode a long
 * element in slices of its own (a returned promise is awaited before the next field).
 */
export interface RepeatedSink {
  field: number;
  take: (bytes: Uint8Array, from: number, to: number) => void | Promise<void>;
}

export type RepeatedField = RepeatedElements | RepeatedSink;

export interface SlicedDecodeOptions<T> {
  /** The generated decoder of the whole message, given the fields other than `repeated`. */
  decode: (bytes: Uint8Array) => T;
  repeated: readonly RepeatedField[];
  /**
   * Called for every top-level field (as field-scan's `eachField` would, over the whole message)
   * before it is decoded: the request pre-check, counting limits and checking text. May throw.
   */
  check?: Visit;
  signal: AbortSignal;
  deadline: number;
}

/** Top-level fields walked between two clock reads. */
const CHECK_EVERY = 256;

export async function decodeInSlices<T>(bytes: Uint8Array, options: SlicedDecodeOptions<T>): Promise<T> {
  const byField = new Map(options.repeated.map((r) => [r.field, r]));
  const lists = new Map<RepeatedElements, unknown[]>();
  for (const r of options.repeated) if ('decode' in r) lists.set(r, []);
  const rest: Uint8Array[] = [];
  const reader = new BinaryReader(bytes);
  for (let n = 1; reader.pos < reader.len; n++) {
    const start = reader.pos;
    const [field, wireType] = reader.tag();
    const repeated = byField.get(field);
    if (repeated !== undefined && wireType === WireType.LengthDelimited) {
      const length = reader.uint32();
      const from = reader.pos;
      if (from + length > reader.len) throw new RangeError('premature EOF');
      reader.pos = from + length;
      options.check?.(field, wireType, from, from + length);
      if ('decode' in repeated)
        lists.get(repeated)!.push(repeated.decode(bytes.subarray(from, from + length)));
      else {
        const taken = repeated.take(bytes, from, from + length);
        if (taken !== undefined) await taken;
      }
    } else {
      reader.skip(wireType, field);
      if (options.check) eachField(bytes, start, reader.pos, options.check);
      rest.push(bytes.subarray(start, reader.pos));
    }
    if (n % CHECK_EVERY === 0 && sliceOver()) await nextTurn(options.signal, options.deadline);
  }
  const message = options.decode(rest.length === 1 ? rest[0]! : Buffer.concat(rest)) as Record<
    string,
    unknown
  >;
  for (const [repeated, list] of lists) message[repeated.property] = list;
  return message as T;
}
