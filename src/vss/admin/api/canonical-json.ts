/**
 * JSON with object keys sorted, so two values that mean the same compare and hash the same whatever
 * the key order a client (or jsonb) used. Values here are depth-bounded (json-fields.ts).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
