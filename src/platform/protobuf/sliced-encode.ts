/**
 * Encoding a large answer without holding the event loop: its bulk is one repeated message field
 * (a row per id), so each element is written by the generated element encoder behind its tag and
 * length, a slice at a time, and the other fields (all numbered after the repeated one) follow as
 * the generated message encoder writes them. That is the generated encoder's own order, so the
 * bytes are the same (tested per message against the generated encoder).
 */
import { nextTurn, sliceOver, stopIfOver } from '../scheduling/index.js';
import { fieldSize, writeVarint } from './wire.js';

export interface SlicedEncodeOptions<E> {
  /** Field number of the repeated field (below 16: a one-byte tag). */
  field: number;
  elements: readonly E[];
  encode: (element: E) => Uint8Array;
  /** The message's other fields, encoded; every one numbered after `field`. */
  after: Uint8Array;
  signal: AbortSignal;
  deadline: number;
}

/** Elements encoded between two looks at the clock. */
const PER_CHECK = 256;

export async function encodeInSlices<E>(options: SlicedEncodeOptions<E>): Promise<Buffer> {
  const { elements, field } = options;
  if (field < 1 || field > 15) throw new RangeError(`field ${field} does not take a one-byte tag`);
  const parts: Uint8Array[] = new Array(elements.length);
  let total = options.after.length;
  for (let i = 0; i < elements.length; i++) {
    if (i > 0 && i % PER_CHECK === 0) {
      if (sliceOver()) await nextTurn(options.signal, options.deadline);
      else stopIfOver(options.signal, options.deadline);
    }
    const part = options.encode(elements[i]!);
    parts[i] = part;
    total += fieldSize(part.length);
  }
  const out = Buffer.allocUnsafe(total);
  const tag = (field << 3) | 2;
  let at = 0;
  for (const part of parts) {
    out[at++] = tag;
    at = writeVarint(out, at, part.length);
    out.set(part, at);
    at += part.length;
  }
  out.set(options.after, at);
  return out;
}
