/**
 * How a real-time attribute (text, as the aggregator keeps it) is written into a point's payload:
 * by the one typing rule of every attribute (model/attribute-value.ts), so `price` sent as "9" is
 * the number 9 and `price LT 10` finds it whatever the point held before. Two cases keep the type
 * the point already has: a number stays a number for any finite numeric text ("9.0", which the rule
 * leaves as text), and a boolean stays a boolean for "true" / "false".
 */
import type { PayloadValue } from '../../platform/vectordb/index.js';
import { numberFromText } from '../model/index.js';

export function payloadValueFor(text: string, current: PayloadValue | undefined): PayloadValue {
  const number = numberFromText(text);
  if (number !== undefined) return number;
  if (typeof current === 'number') {
    const loose = text.trim() === '' ? Number.NaN : Number(text);
    if (Number.isFinite(loose)) return loose;
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
