/**
 * The HTTP job runner against a small batch platform served inside the test (node:http) that keeps
 * the contract of http-job-runner.ts: start idempotent by job id, poll, cancel, and every error
 * path (4xx, 5xx retried, timeouts, unreachable, answers outside the contract).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { isLatticeError } from '../../../../src/platform/errors.js';
import { HttpJobRunner, type IngestionJob, jobBody } from '../../../../src/vss/admin/jobs/index.js';
import { jobFor } from './training-data.js';

interface PlatformJob {
  body: Record<string, unknown>;
  state: 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  polls: number;
}

/** A batch platform: jobs advance to SUCCEEDED on the third poll; `answer` overrides any response. */
class FakePlatform {
  readonly jobs = new Map<string, PlatformJob>();
  readonly requests: { method: string; url: string; authorization: string | undefined }[] = [];
  /** Answers for the next requests, in order, before the contract's own. */
  readonly scripted: ((res: ServerResponse) => void)[] = [];
  server!: Server;
  base = '';

  async listen(): Promise<void> {
    this.server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/v1`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += chunk;
    this.requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      authorization: req.headers.authorization,
    });
    const scripted = this.scripted.shift();
    if (scripted !== undefined) return scripted(res);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').replace(/^\/api\/v1/, '');
    if (req.method === 'POST' && path === '/jobs') {
      const body = JSON.parse(text) as Record<string, unknown>;
      const id = body.job_id as string;
      const known = this.jobs.get(id);
      if (known !== undefined) {
        if (JSON.stringify(known.body) !== JSON.stringify(body)) {
          return send(409, {
            error: { code: 'CONFLICT', message: `job ${id} exists with other parameters` },
          });
        }
        return send(200, this.#status(id, known));
      }
      const job: PlatformJob = { body, state: 'RUNNING', polls: 0 };
      this.jobs.set(id, job);
      return send(201, this.#status(id, job));
    }
    const match = /^\/jobs\/([^/]+)(\/cancel)?$/.exec(path);
    const id = match ? decodeURIComponent(match[1]!) : '';
    const job = this.jobs.get(id);
    if (match === null || job === undefined) return send(404, { error: `no job ${id}` });
    if (req.method === 'POST' && match[2] !== undefined) {
      if (job.state === 'RUNNING') job.state = 'FAILED';
      return send(200, { ...this.#status(id, job), message: 'cancelled' });
    }
    if (req.method === 'GET' && match[2] === undefined) {
      job.polls++;
      if (job.state === 'RUNNING' && job.polls >= 3) job.state = 'SUCCEEDED';
      return send(200, this.#status(id, job));
    }
    return send(405, { message: 'method not allowed' });
  }

  #status(id: string, job: PlatformJob): Record<string, unknown> {
    const status: Record<string, unknown> = { job_id: id, state: job.state };
    if (job.state === 'SUCCEEDED') {
      Object.assign(status, {
        rows_read: 1000,
        rows_published: 998,
        bad_row_count: 2,
        bad_rows: [{ file: 'part-0.parquet', row: 17, reason: 'emb: missing embedding' }],
        message: 'done',
      });
    } else if (job.state === 'RUNNING') {
      Object.assign(status, {
        progress: job.polls / 3,
        rows_read: job.polls * 300,
        rows_published: job.polls * 300,
      });
    }
    return status;
  }
}

const platform = new FakePlatform();

before(() => platform.listen());
after(() => platform.close());

function runner(options: Partial<ConstructorParameters<typeof HttpJobRunner>[0]> = {}): HttpJobRunner {
  return new HttpJobRunner({ baseUrl: `${platform.base}/`, backoffMs: 1, timeoutMs: 2000, ...options });
}

const job = (overrides: Partial<IngestionJob> = {}) =>
  jobFor('s3://bucket/clip/2024-06-01/', {
    jobId: `reset catalog/clip ${Math.random().toString(36).slice(2)}`,
    columns: {
      idColumn: 'id',
      embeddingColumn: 'emb',
      toBeIndexedColumn: 'flag',
      searchEmbeddingColumn: 'search',
    },
    indexDefaults: { organic: true },
    ...overrides,
  });

describe('HTTP job runner', () => {
  test('starts a job with its parameters, polls it to SUCCEEDED, and a second start does not start another', async () => {
    const http = runner({ token: 'secret' });
    const spec = job();
    const started = await http.start(spec);
    assert.deepEqual(started, {
      jobId: spec.jobId,
      state: 'RUNNING',
      progress: 0,
      rowsRead: 0,
      rowsPublished: 0,
      badRowCount: 0,
      badRows: [],
      message: '',
    });
    const sent = platform.jobs.get(spec.jobId)!.body;
    assert.deepEqual(sent, {
      job_id: spec.jobId,
      kind: 'RESET',
      entity: 'catalog',
      model_name: 'm',
      version: 1,
      training_data_path: 's3://bucket/clip/2024-06-01/',
      ingestion_column_mapping: {
        id_column: 'id',
        embedding_column: 'emb',
        to_be_indexed_column: 'flag',
        search_embedding_column: 'search',
      },
      vector_dimension: 4,
      variants_version_map: { organic: 1, live: 1, brand_a: 1 },
      variants_index_defaults: { organic: true },
      topic: 'vss-embeddings',
      partitions: 3,
    });
    assert.deepEqual(sent, jobBody(spec));
    assert.equal(platform.requests.at(-1)!.authorization, 'Bearer secret');

    const polled = await http.status(spec.jobId);
    assert.equal(polled.state, 'RUNNING');
    assert.ok(Math.abs(polled.progress - 1 / 3) < 1e-9);
    assert.equal(polled.rowsRead, 300);
    assert.equal((await http.start(spec)).state, 'RUNNING', 'a second start answers the running job');
    assert.equal(platform.jobs.get(spec.jobId)!.polls, 1, 'the same job, not a new one');
    await http.status(spec.jobId);
    const done = await http.status(spec.jobId);
    assert.deepEqual(done, {
      jobId: spec.jobId,
      state: 'SUCCEEDED',
      progress: 1,
      rowsRead: 1000,
      rowsPublished: 998,
      badRowCount: 2,
      badRows: [{ file: 'part-0.parquet', row: 17, reason: 'emb: missing embedding' }],
      message: 'done',
    });
    // The id travels URL-encoded.
    assert.ok(platform.requests.some((r) => r.url === `/api/v1/jobs/${encodeURIComponent(spec.jobId)}`));
  });

  test('cancel; unknown ids are NOT_FOUND; other parameters under a known id are ALREADY_EXISTS', async () => {
    const http = runner();
    const spec = job();
    await http.start(spec);
    const cancelled = await http.cancel(spec.jobId);
    assert.equal(cancelled.state, 'FAILED');
    assert.equal(cancelled.message, 'cancelled');
    await assert.rejects(http.status('nope'), (err) => {
      assert.ok(isLatticeError(err, 'NOT_FOUND'));
      assert.match(
        err.message,
        /^job platform GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/jobs\/nope answered 404: no job nope$/,
      );
      return true;
    });
    await assert.rejects(http.cancel('nope'), (err) => isLatticeError(err, 'NOT_FOUND'));
    await assert.rejects(http.start({ ...spec, version: 2, variantVersions: { organic: 2 } }), (err) => {
      assert.ok(isLatticeError(err, 'ALREADY_EXISTS'));
      assert.match(err.message, /answered 409: CONFLICT: job .* exists with other parameters/);
      return true;
    });
    await assert.rejects(http.start({ ...spec, entity: 'bad entity' }), (err) =>
      isLatticeError(err, 'INVALID_ARGUMENT'),
    );
  });

  test('5xx, 429 and dropped connections are retried; past the attempts the error says how many', async () => {
    const http = runner({ attempts: 3 });
    const spec = job();
    const fail = (status: number) => (res: ServerResponse) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'busy' } }));
    };
    platform.scripted.push(fail(503), (res) => res.socket?.destroy());
    assert.equal((await http.start(spec)).state, 'RUNNING', 'the third attempt went through');
    platform.scripted.push(fail(500), fail(429), fail(502));
    await assert.rejects(http.status(spec.jobId), (err) => {
      assert.ok(isLatticeError(err, 'UNAVAILABLE'));
      assert.match(err.message, /answered 502: busy \(3 attempts\)$/);
      return true;
    });
    platform.scripted.push(fail(400));
    await assert.rejects(http.status(spec.jobId), (err) => isLatticeError(err, 'INVALID_ARGUMENT'));
    platform.scripted.push(fail(401));
    await assert.rejects(http.status(spec.jobId), (err) => isLatticeError(err, 'UNAUTHENTICATED'));
    platform.scripted.push(fail(403));
    await assert.rejects(http.status(spec.jobId), (err) => isLatticeError(err, 'PERMISSION_DENIED'));
  });

  test('a platform that does not answer in time is DEADLINE_EXCEEDED; one that is not there is UNAVAILABLE', async () => {
    const http = runner({ timeoutMs: 100, attempts: 2 });
    const silent: ServerResponse[] = [];
    platform.scripted.push(
      (res) => silent.push(res),
      (res) => silent.push(res),
    );
    await assert.rejects(http.status('any'), (err) => {
      assert.ok(isLatticeError(err, 'DEADLINE_EXCEEDED'));
      assert.match(err.message, /did not answer within 100 ms \(2 attempts\)$/);
      return true;
    });
    for (const res of silent) res.destroy();

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const nobody = new HttpJobRunner({ baseUrl: `http://127.0.0.1:${port}`, attempts: 2, backoffMs: 1 });
    await assert.rejects(nobody.status('any'), (err) => {
      assert.ok(isLatticeError(err, 'UNAVAILABLE'));
      assert.match(
        err.message,
        new RegExp(`^job platform GET http://127\\.0\\.0\\.1:${port}/jobs/any failed: .*\\(2 attempts\\)$`),
      );
      return true;
    });
    assert.throws(
      () => new HttpJobRunner({ baseUrl: 'ftp://example' }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
    );
    assert.throws(
      () => new HttpJobRunner({ baseUrl: 'not a url' }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
    );
  });

  test('answers outside the contract are INTERNAL errors naming what is wrong', async () => {
    const http = runner();
    const spec = job();
    await http.start(spec);
    const answer = (body: string) => (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    };
    const cases: [string, RegExp][] = [
      ['<html>oops</html>', /answered 200 with a body that is not JSON: <html>oops<\/html>/],
      [JSON.stringify({ job_id: spec.jobId, state: 'QUEUED' }), /job status outside the contract: state /],
      [
        JSON.stringify({ job_id: spec.jobId, state: 'RUNNING', progress: 2 }),
        /outside the contract: progress /,
      ],
      [
        JSON.stringify({ job_id: 'someone-else', state: 'RUNNING' }),
        /answered with the status of job someone-else, not /,
      ],
      [JSON.stringify({ state: 'RUNNING' }), /outside the contract: job_id /],
    ];
    for (const [body, message] of cases) {
      platform.scripted.push(answer(body));
      await assert.rejects(http.status(spec.jobId), (err) => {
        assert.ok(isLatticeError(err, 'INTERNAL'), String(err));
        assert.match(err.message, message);
        return true;
      });
    }
  });
});
