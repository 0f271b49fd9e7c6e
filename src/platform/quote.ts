/** Characters of a user-supplied name or id that error messages quote. */
export const QUOTE_PREFIX = 64;

/**
 * A user-supplied name or id for an error message: JSON-quoted (control characters escaped) and cut
 * to its first {@link QUOTE_PREFIX} characters, so a message never echoes an unbounded input.
 */
export function quote(text: string, max = QUOTE_PREFIX): string {
  if (text.length <= max) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, max))}… (${text.length} characters)`;
}
