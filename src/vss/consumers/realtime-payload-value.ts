/**
 * How a real-time attribute (text, as the aggregator keeps it) is written into a point's payload.
 * Ingestion may have given the field a number or a boolean (from the embedding event's payload),
 * and range filters only match numbers: an update keeps the type the point already has when the
 * text is a value of that type, so `price: 12` updated to "9" stays a number and `price LT 10`
 * still finds it. Otherwise the text is written as it is.
 */
import type { PayloadValue } from '../../platform/vectordb/index.js';

export function payloadValueFor(text: string, current: PayloadValue | undefined): PayloadValue {
  if (typeof current === 'number') {
    const number = text.trim() === '' ? Number.NaN : Number(text);
    if (Number.isFinite(number)) return number;
  } else if (typeof current === 'boolean') {
    if (text === 'true' || text === 'false') return text === 'true';
  }
  return text;
}

/** Whether two payload values are the same value (arrays element by element). */
export function samePayloadValue(a: PayloadValue | undefined, b: PayloadValue | undefined): boolean {
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((element, i) => element === b[i]);
  }
  return a === b;
}
