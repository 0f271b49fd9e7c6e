/**
 * A fetch-based client of the vss admin HTTP API (vss.md "Admin HTTP API"). It sends JSON with the
 * API key as `Authorization: Bearer` and turns the API's error body
 * `{ "error": { "code", "message", "field" } }` into an AdminApiError, and a server that cannot be
 * reached into an AdminUnreachableError, so the commands can tell the user what to do about each.
 */
import { describeError, type ErrorCode, LatticeError } from '../../platform/errors.js';
import { type ClientTls, type FetchLike, fetchWithTls } from '../../platform/http/index.js';

/** How long one request may take before the CLI gives up on it. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The API answered with an error: its own code, message and field, as the API said them. */
export class AdminApiError extends LatticeError {
  /** The HTTP status. */
  readonly status: number;
  /** The `error.code` of the body (or `HTTP_<status>` when the body is not the API's). */
  readonly apiCode: string;

  constructor(status: number, apiCode: string, message: string, field: string | undefined) {
    super(statusCode(status), message, { field });
    this.name = 'AdminApiError';
    this.status = status;
    this.apiCode = apiCode;
  }
}

/** Nothing answered at the admin URL (refused, unknown host, reset, timed out). */
export class AdminUnreachableError extends LatticeError {
  readonly url: string;

  constructor(url: string, reason: string, cause: unknown) {
    super('UNAVAILABLE', `the vss admin API is not reachable at ${url} (${reason})`, { cause });
    this.name = 'AdminUnreachableError';
    this.url = url;
  }
}

export interface AdminClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:8090`. */
  url: string;
  apiKey?: string | undefined;
  timeoutMs?: number;
  /** What an https:// URL is trusted by and shown (settings `tls`); default the system's roots. */
  tls?: ClientTls | undefined;
}

/** A parsed answer, and whether the API replayed it for a repeated Idempotency-Key. */
export interface AdminAnswer {
  body: unknown;
  replayed: boolean;
}

export interface RequestOptions {
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export class AdminClient {
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: FetchLike;

  constructor(options: AdminClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
    this.#fetch = fetchWithTls(options.tls);
  }

  /** POST `path` with a JSON body; the parsed JSON answer. */
  async post(path: string, body: unknown, options: RequestOptions = {}): Promise<unknown> {
    return (await this.#request('POST', path, body, options)).body;
  }

  /**
   * {@link post}, also saying whether the answer is a replay: the API's answer recorded earlier under
   * the request's Idempotency-Key (header `idempotency-replayed`), so nothing new was started.
   */
  postAnswer(path: string, body: unknown, options: RequestOptions = {}): Promise<AdminAnswer> {
    return this.#request('POST', path, body, options);
  }

  /** GET `path`; the parsed JSON answer. */
  async get(path: string, options: RequestOptions = {}): Promise<unknown> {
    return (await this.#request('GET', path, undefined, options)).body;
  }

  async #request(method: string, path: string, body: unknown, options: RequestOptions): Promise<AdminAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.#apiKey !== undefined && this.#apiKey !== '') headers.authorization = `Bearer ${this.#apiKey}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(`${this.url}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      });
      text = await response.text();
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (timeout.aborted) {
        throw new AdminUnreachableError(this.url, `no answer within ${this.#timeoutMs / 1000} s`, err);
      }
      throw new AdminUnreachableError(this.url, connectionFailure(err), err);
    }
    const parsed = parseJson(text);
    if (!response.ok) throw apiError(response, text, parsed);
    if (parsed === undefined) {
      throw new AdminApiError(
        response.status,
        `HTTP_${response.status}`,
        `the admin API answered ${method} ${path} with a body that is not JSON: ${excerpt(text)}`,
        undefined,
      );
    }
    return { body: parsed, replayed: response.headers.get('idempotency-replayed') === 'true' };
  }
}

function apiError(response: Response, text: string, parsed: unknown): AdminApiError {
  const error = (parsed as { error?: unknown } | undefined)?.error;
  if (error !== null && typeof error === 'object') {
    const { code, message, field } = error as Record<string, unknown>;
    if (typeof message === 'string') {
      return new AdminApiError(
        response.status,
        typeof code === 'string' ? code : `HTTP_${response.status}`,
        message,
        typeof field === 'string' && field !== '' ? field : undefined,
      );
    }
  }
  // Not the API's error body (a proxy, or another server on the port): say what came back.
  const what =
    response.statusText === '' ? `HTTP ${response.status}` : `HTTP ${response.status} ${response.statusText}`;
  return new AdminApiError(
    response.status,
    `HTTP_${response.status}`,
    `${what}: ${excerpt(text)}`,
    undefined,
  );
}

/** The reason from fetch's cause chain: `connect ECONNREFUSED 127.0.0.1:8090`, `getaddrinfo ENOTFOUND x`. */
function connectionFailure(err: unknown): string {
  let current: unknown = err;
  while (current instanceof Error) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return current.message || code;
    current = current.cause;
  }
  return describeError(err);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat === '') return '(empty body)';
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function statusCode(status: number): ErrorCode {
  if (status === 400) return 'INVALID_ARGUMENT';
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'PERMISSION_DENIED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'FAILED_PRECONDITION';
  if (status === 429) return 'RESOURCE_EXHAUSTED';
  if (status === 503) return 'UNAVAILABLE';
  return 'INTERNAL';
}
