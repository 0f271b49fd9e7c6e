/**
 * The `JobRunner` of an external batch platform (Spark, Databricks, Airflow, …) over HTTP and JSON.
 * The platform does what the built-in runner does (docs/vss.md, "vss ingestion jobs"): it reads the
 * training data, publishes one embedding event per row (with `job_id`) and then one EOF marker per
 * partition of `topic`. This runner only starts and watches it.
 *
 * The contract (`<base>` is `baseUrl`, job ids are URL-encoded in paths):
 *
 * - `POST <base>/jobs` starts a job. Body:
 *   `{ "job_id", "kind": "RESET"|"DELTA", "entity", "model_name", "version", "training_data_path",
 *      "ingestion_column_mapping": { "id_column", "embedding_column", "to_be_indexed_column",
 *      "search_embedding_column"? }, "vector_dimension", "variants_version_map": { variant: version },
 *      "variants_index_defaults": { variant: bool }, "topic", "partitions" }`.
 *   Idempotent by `job_id`: the platform answers 200, 201 or 202 with the job's status, and for a
 *   known id with the same parameters the existing job's status (it must not run it twice); 409 for
 *   a known id with other parameters.
 * - `GET <base>/jobs/{job_id}` answers 200 with the status; 404 for an unknown id.
 * - `POST <base>/jobs/{job_id}/cancel` stops the job (no EOF markers) and answers 200 with the
 *   status; 404 for an unknown id.
 * - A status: `{ "job_id", "state": "RUNNING"|"SUCCEEDED"|"FAILED", "progress": 0..1, "rows_read",
 *   "rows_published", "bad_row_count", "bad_rows": [{ "file", "row", "reason" }], "message" }`; only
 *   `job_id` and `state` are required (counts default to 0, the list to empty, progress to 0, or 1
 *   once SUCCEEDED).
 * - Errors: any other status, with a body `{ "error": { "code", "message" } }`, `{ "error": "…" }`
 *   or `{ "message": "…" }`, whose message is passed on.
 *
 * Each call is bounded by `timeoutMs`. Network failures, timeouts, 429 and 5xx answers are retried
 * (`attempts` in all, with backoff): every call is idempotent. Errors are LatticeErrors naming the
 * platform: 400/422 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND,
 * 409 ALREADY_EXISTS, 429/5xx/unreachable UNAVAILABLE, timeout DEADLINE_EXCEEDED, an answer outside
 * the contract INTERNAL.
 */
import { z } from 'zod';
import { describeError, type ErrorCode, LatticeError } from '../../../platform/errors.js';
import { type ClientTls, type FetchLike, fetchWithTls } from '../../../platform/http/index.js';
import { backoffDelay } from '../../../platform/scheduling/index.js';
import { validateJob } from './ingestion-job.js';
import { type IngestionJob, JOB_STATES, type JobRunner, type JobStatus } from './job-runner.js';

export interface HttpJobRunnerOptions {
  /** The platform's base URL, e.g. `https://batch.internal/api/v1/lattice`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  /** Bound on each call, ms; default 10,000. */
  timeoutMs?: number;
  /** Calls per request, the first included, for transient failures; default 3. */
  attempts?: number;
  /** Backoff after the first failed attempt, ms (doubling); default 200. */
  backoffMs?: number;
  /** Most bad rows kept from a status; default 100. */
  maxBadRows?: number;
  /** What an https:// platform is trusted by and shown (settings `tls`); default the system's roots. */
  tls?: ClientTls | undefined;
}

const count = z.number().int().min(0).default(0);

const statusSchema = z.object({
  job_id: z.string().min(1),
  state: z.enum(JOB_STATES),
  progress: z.number().min(0).max(1).optional(),
  rows_read: count,
  rows_published: count,
  bad_row_count: count,
  bad_rows: z
    .array(z.object({ file: z.string(), row: z.number().int().min(0), reason: z.string() }))
    .default([]),
  message: z.string().default(''),
});

const HTTP_ERRORS: Readonly<Record<number, ErrorCode>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  422: 'INVALID_ARGUMENT',
};

export class HttpJobRunner implements JobRunner {
  readonly kind = 'http';
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #attempts: number;
  readonly #backoffMs: number;
  readonly #maxBadRows: number;
  readonly #fetch: FetchLike;

  constructor(options: HttpJobRunnerOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new LatticeError('INVALID_ARGUMENT', `job platform URL ${options.baseUrl} is not a URL`, {
        field: 'baseUrl',
      });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `job platform URL ${options.baseUrl} must be http or https`,
        {
          field: 'baseUrl',
        },
      );
    }
    this.#base = url.href.replace(/\/+$/, '');
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#attempts = Math.max(1, options.attempts ?? 3);
    this.#backoffMs = options.backoffMs ?? 200;
    this.#maxBadRows = options.maxBadRows ?? 100;
    this.#fetch = fetchWithTls(options.tls);
  }

  async start(job: IngestionJob): Promise<JobStatus> {
    const valid = validateJob(job);
    return this.#call('POST', '/jobs', valid.jobId, jobBody(valid));
  }

  status(jobId: string): Promise<JobStatus> {
    return this.#call('GET', `/jobs/${encodeURIComponent(jobId)}`, jobId);
  }

  cancel(jobId: string): Promise<JobStatus> {
    return this.#call('POST', `/jobs/${encodeURIComponent(jobId)}/cancel`, jobId, {});
  }

  /** Nothing to release: jobs run on the platform. */
  async close(): Promise<void> {}

  async #call(method: string, path: string, jobId: string, body?: unknown): Promise<JobStatus> {
    const url = `${this.#base}${path}`;
    const what = `job platform ${method} ${url}`;
    for (let attempt = 1; ; attempt++) {
      let failure: LatticeError;
      try {
        return this.#status(await this.#send(method, url, what, body), jobId, what);
      } catch (err) {
        if (!(err instanceof RetryableError)) throw err;
        failure = err.error;
      }
      if (attempt >= this.#attempts) {
        throw new LatticeError(failure.code, `${failure.message} (${attempt} attempts)`, {
          cause: failure.cause,
        });
      }
      const delay = backoffDelay({ initialMs: this.#backoffMs, jitter: 'half' }, attempt);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** The answer's JSON body for a 2xx; throws a RetryableError for what a retry may fix. */
  async #send(method: string, url: string, what: string, body: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    let response: Response;
    let text: string;
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      text = await response.text();
    } catch (err) {
      if (signal.aborted) {
        throw new RetryableError(
          new LatticeError('DEADLINE_EXCEEDED', `${what} did not answer within ${this.#timeoutMs} ms`),
        );
      }
      throw new RetryableError(
        new LatticeError('UNAVAILABLE', `${what} failed: ${describeError(err)}`, { cause: err }),
      );
    }
    if (response.ok) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new LatticeError(
          'INTERNAL',
          `${what} answered ${response.status} with a body that is not JSON: ${excerpt(text)}`,
        );
      }
    }
    const message = `${what} answered ${response.status}: ${errorMessage(text)}`;
    if (response.status === 429 || response.status >= 500) {
      throw new RetryableError(new LatticeError('UNAVAILABLE', message));
    }
    throw new LatticeError(HTTP_ERRORS[response.status] ?? 'FAILED_PRECONDITION', message);
  }

  #status(body: unknown, jobId: string, what: string): JobStatus {
    const parsed = statusSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new LatticeError(
        'INTERNAL',
        `${what} answered with a job status outside the contract: ${issue.path.join('.') || 'body'} ${issue.message}`,
      );
    }
    const status = parsed.data;
    if (status.job_id !== jobId) {
      throw new LatticeError(
        'INTERNAL',
        `${what} answered with the status of job ${excerpt(status.job_id)}, not ${jobId}`,
      );
    }
    return {
      jobId,
      state: status.state,
      progress: status.state === 'SUCCEEDED' ? 1 : (status.progress ?? 0),
      rowsRead: status.rows_read,
      rowsPublished: status.rows_published,
      badRowCount: Math.max(status.bad_row_count, status.bad_rows.length),
      badRows: status.bad_rows.slice(0, this.#maxBadRows),
      message: status.message,
    };
  }
}

/** A failure a later attempt may not meet. */
class RetryableError extends Error {
  constructor(readonly error: LatticeError) {
    super(error.message);
  }
}

/** The job as the contract's request body. */
export function jobBody(job: IngestionJob): Record<string, unknown> {
  const columns: Record<string, string> = {
    id_column: job.columns.idColumn,
    embedding_column: job.columns.embeddingColumn,
    to_be_indexed_column: job.columns.toBeIndexedColumn,
  };
  if (job.columns.searchEmbeddingColumn !== undefined) {
    columns.search_embedding_column = job.columns.searchEmbeddingColumn;
  }
  return {
    job_id: job.jobId,
    kind: job.kind,
    entity: job.entity,
    model_name: job.modelName,
    version: job.version,
    training_data_path: job.trainingDataPath,
    ingestion_column_mapping: columns,
    vector_dimension: job.vectorDimension,
    variants_version_map: job.variantVersions,
    variants_index_defaults: job.indexDefaults,
    topic: job.topic,
    partitions: job.partitions,
  };
}

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof body.error === 'string') return excerpt(body.error);
    if (typeof body.error === 'object' && body.error !== null) {
      const error = body.error as { code?: unknown; message?: unknown };
      if (typeof error.message === 'string') {
        return excerpt(typeof error.code === 'string' ? `${error.code}: ${error.message}` : error.message);
      }
    }
    if (typeof body.message === 'string') return excerpt(body.message);
  } catch {
    // not JSON: the text itself
  }
  return text.trim() === '' ? '(no body)' : excerpt(text);
}

function excerpt(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= 300 ? line : `${line.slice(0, 300)}… (${line.length} characters)`;
}
