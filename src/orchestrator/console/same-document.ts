/**
 * Whether two JSON documents say the same: equal after sorting object keys. A document read back
 * from the store (a file rewritten by an editor, YAML turned into JSON) may order keys differently
 * from the revision recorded for it without being a different revision.
 */
export function sameDocument(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(item).sort()) sorted[key] = (item as Record<string, unknown>)[key];
    return sorted;
  });
}
