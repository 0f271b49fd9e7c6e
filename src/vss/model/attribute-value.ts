/**
 * The one rule for the type of an attribute value written into a point's payload, whatever its
 * source (an embedding event's payload, the aggregator row, a real-time update): text that reads as
 * a number is stored as that number, so range filters (LT … BETWEEN_INCLUSIVE, which only numbers
 * pass in every vector DB) compare it as a number.
 *
 * Text reads as a number when it is written as a JSON number: an optional `-`, digits without a
 * leading zero (`0` alone is fine), an optional fraction and exponent (`12`, `-3.5`, `0.25`,
 * `1e3`). Anything else stays text: `012` and `+5` (codes and phone numbers keep their leading
 * characters), ` 7` (spaces), `0x1f`, `Infinity`, and whole numbers past 2^53 (ids, which a double
 * would round). A number's text form may change on the way (`12.50` is returned as `12.5`); `IN`
 * still matches it by `"12.50"`, since filter values are compared as numbers too.
 */
import type { Payload, PayloadValue } from '../../platform/vectordb/index.js';

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** The number `text` reads as under the rule above, or undefined when it stays text. */
export function numberFromText(text: string): number | undefined {
  const shape = JSON_NUMBER.exec(text);
  if (shape === null) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) return undefined;
  const whole = shape[1] === undefined && shape[2] === undefined;
  if (whole && !Number.isSafeInteger(value)) return undefined;
  return value === 0 ? 0 : value;
}

/** A payload value as the rule stores it: numeric text becomes a number, everything else is kept. */
export function attributeValue(value: PayloadValue): PayloadValue {
  if (typeof value !== 'string') return value;
  return numberFromText(value) ?? value;
}

/** Every field of `payload` through {@link attributeValue}, into a new object. */
export function typedAttributes(payload: Readonly<Payload>): Payload {
  const typed: Payload = {};
  for (const field in payload) {
    if (Object.hasOwn(payload, field)) typed[field] = attributeValue(payload[field]!);
  }
  return typed;
}
