/**
 * `--address`: the one name every command gives the server it talks to (the orchestrator, vss
 * serving, the feature store, an ops server, the vss admin API). Its value is checked while the
 * command line is parsed, so a malformed one is a usage error (exit status 2) before anything is
 * dialled. Imports nothing but commander (see command-kit.ts).
 */
import { InvalidArgumentError, Option } from 'commander';

/** What speaks at the address: gRPC (no path after the port) or HTTP (a base URL, path allowed). */
export type AddressKind = 'grpc' | 'http';

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/?#[\]@]+):(\d{1,5})$/;

/** `--address <ADDRESS>` for a server of `kind`; `help` says which server and its default. */
export function addressOption(kind: AddressKind, help: string): Option {
  const forms =
    kind === 'grpc' ? 'HOST:PORT, or https://HOST:PORT to dial TLS' : 'HOST:PORT, or an http(s):// URL';
  return new Option('--address <ADDRESS>', `${help}: ${forms}`).argParser(addressParser(kind));
}

/** The value parser of an `--address` of `kind`: the address as given, once it is one. */
export function addressParser(kind: AddressKind): (text: string) => string {
  return (text) => {
    const problem = addressProblem(text.trim(), kind);
    if (problem !== undefined) throw new InvalidArgumentError(problem);
    return text.trim();
  };
}

function addressProblem(text: string, kind: AddressKind): string | undefined {
  const expected =
    kind === 'grpc'
      ? 'It must be HOST:PORT or http(s)://HOST:PORT.'
      : 'It must be HOST:PORT or an http:// or https:// URL.';
  // gRPC's own unix-socket targets pass through to the channel as they are.
  if (kind === 'grpc' && /^unix:\S+$/.test(text)) return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    if (!URL.canParse(text)) return expected;
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return expected;
    if (url.hostname === '') return expected;
    if (
      kind === 'grpc' &&
      (url.pathname.replace(/\/+$/, '') !== '' || url.search !== '' || url.hash !== '')
    ) {
      return 'A gRPC address has no path or query after the port.';
    }
    return undefined;
  }
  const port = HOST_PORT.exec(text)?.[2];
  if (port === undefined) return expected;
  return Number(port) >= 1 && Number(port) <= 65535 ? undefined : 'Its port must be from 1 to 65535.';
}

/**
 * The base URL of an HTTP server at `address` (an `--address` value): a URL as given (without a
 * trailing slash), a bare HOST:PORT over https when `secure` (the settings serve TLS), else http.
 */
export function httpBaseUrl(address: string, secure: boolean): string {
  const base = /^https?:\/\//i.test(address) ? address : `${secure ? 'https' : 'http'}://${address}`;
  return base.replace(/\/+$/, '');
}
