/**
 * Every call the console makes: JSON to the ops server's /api routes, with the signed-in key as a
 * bearer token. The key lives in sessionStorage (gone with the tab, never written to disk by the
 * console). A failed call throws ApiError with the server's `{ error: { code, message, field } }`.
 */

export const KEY_STORAGE = 'lattice.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, key);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    /** The whole error body, for answers that carry more (e.g. `problems`). */
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** Called when a call answers 401: the key was revoked or never valid; the app shows the login. */
let onUnauthenticated: () => void = () => {};
export function whenUnauthenticated(handler: () => void): void {
  onUnauthenticated = handler;
}

export interface CallOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Use this key instead of the stored one (the login's check). */
  key?: string;
  signal?: AbortSignal;
}

export interface Answer<T> {
  body: T;
  status: number;
  headers: Headers;
  elapsedMs: number;
}

/** One call; resolves to the answer of a 2xx, throws ApiError otherwise. */
export async function call<T>(path: string, options: CallOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  const key = options.key ?? storedKey();
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const started = performance.now();
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (err) {
    throw new ApiError(0, 'UNAVAILABLE', `the server did not answer: ${(err as Error).message}`);
  }
  const elapsedMs = performance.now() - started;
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string; field?: string } } | undefined)
      ?.error;
    if (response.status === 401 && options.key === undefined) onUnauthenticated();
    throw new ApiError(
      response.status,
      error?.code ?? `HTTP_${response.status}`,
      error?.message ?? (typeof body === 'string' && body !== '' ? body : response.statusText),
      error?.field,
      body,
    );
  }
  return { body: body as T, status: response.status, headers: response.headers, elapsedMs };
}

export async function get<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await call<T>(path, signal === undefined ? {} : { signal })).body;
}

export async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  return (await call<T>(path, { method, ...(body === undefined ? {} : { body }) })).body;
}

/** A path segment, escaped. */
export const seg = (value: string): string => encodeURIComponent(value);
