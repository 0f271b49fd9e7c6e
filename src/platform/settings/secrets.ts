/**
 * Which settings hold secrets, decided by one rule over their names so that a new secret setting is
 * masked without anyone remembering to list it: a setting whose name ends in apiKey(s), token(s),
 * password, secret or privateKey (any case, with or without `-`/`_`) is a secret, and so is the
 * password (and any query parameter named by the same rule) inside a URL in any setting, such as
 * `postgres://lattice:PASSWORD@db/lattice`. test/platform/settings/secret-settings.test.ts walks the
 * whole settings schema against this rule.
 */

export const SECRET_MASK = '***';

const SECRET_NAME = /(?:api[-_]?keys?|tokens?|passwords?|passwd|secrets?|private[-_]?keys?|credentials?)$/i;
/** `scheme://user:password@` (the user part may be empty, as in `redis://:password@host`). */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*:)[^/?#@]*@/i;
const QUERY_PARAM = /([?&])([^=&#]+)=([^&#]*)/g;

/** Whether a setting of this name holds a secret. */
export function isSecretSettingName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** The URL with its password and secret query parameters masked; any other text as it is. */
export function maskUrlCredentials(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text;
  return text
    .replace(URL_PASSWORD, `$1${SECRET_MASK}@`)
    .replace(QUERY_PARAM, (whole, sep: string, name: string) =>
      isSecretSettingName(name) ? `${sep}${name}=${SECRET_MASK}` : whole,
    );
}

/** Every value under a secret setting masked: a text, each item of a list, each value of a map (its keys kept). */
function maskAll(value: unknown): unknown {
  if (typeof value === 'string') return value === '' ? value : SECRET_MASK;
  if (Array.isArray(value)) return value.map(maskAll);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, maskAll(inner)]));
  }
  return value;
}

/**
 * A copy of settings (or any part of them) fit to print: secret settings masked (an unset or empty
 * one stays so, rather than looking set), credentials in URLs masked.
 */
export function maskSecrets(value: unknown): unknown {
  if (typeof value === 'string') return maskUrlCredentials(value);
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        isSecretSettingName(key) ? maskAll(inner) : maskSecrets(inner),
      ]),
    );
  }
  return value;
}
