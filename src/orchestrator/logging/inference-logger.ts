import { createHash, randomUUID } from 'node:crypto';
import { OrchestratorLog } from '../../gen/orchestrator/v1/log.js';
import { describeError, isLatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { CounterMetric, GaugeMetric, Metrics } from '../../platform/metrics/index.js';
import { MessageTooLargeError } from '../../platform/queue/index.js';
import { withTimeout } from '../../platform/timeout.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { LogBatch } from './log-batch.js';
import {
  encodeLogBatch,
  type LoggingConfig,
  planLogBatches,
  sampleRequest,
  splitBatch,
} from './log-records.js';
import type { LogSink } from './log-sink.js';

export interface InferenceLoggerOptions {
  /** Where records go: a QueueLogSink in production, a FileLogSink offline. */
  sink: LogSink;
  metrics: Metrics;
  logger: Logger;
  /** Sampled requests waiting to be encoded and published; beyond this `log` drops. Default 1000. */
  maxBuffered?: number;
  /**
   * Bytes those requests hold (their matrices: fixed-width columns, variable-width cells, strings);
   * a request that would take the buffer past this is dropped. Default 32 MiB.
   */
  maxBufferedBytes?: number;
  /** Requests encoded and published at once. Default 2. */
  concurrency?: number;
  /** Write attempts per record before it is dropped. Default 3. */
  maxAttempts?: number;
  /** Wait before each retry, by attempt (the last entry repeats). Default [100, 1000] ms. */
  retryBackoffMs?: readonly number[];
  /** A write not done by then counts as failed (and is retried). Default 10 s. */
  writeTimeoutMs?: number;
  /** Uniform in [0, 1); the sampling decision. Default Math.random. */
  random?: () => number;
  /** Epoch ms; `created_at_ms` of records. Default Date.now. */
  now?: () => number;
}

/** What `log` did with a request. */
export type LogOutcome = 'queued' | 'not_sampled' | 'dropped' | 'closed';

interface Pending {
  readonly context: ExecutionContext;
  readonly createdAtMs: number;
  /** What holding the request costs, from requestBytes. */
  readonly bytes: number;
}

/**
 * The memory a buffered request keeps alive: its matrices' fixed-width arenas, variable-width cells
 * and strings (UTF-16, two bytes a character), and a slate's target index lists. The model snapshot
 * is shared by every request and not counted.
 */
export function requestBytes(context: ExecutionContext): number {
  let bytes = matrixBytes(context.matrix);
  if (context.slate) {
    bytes += matrixBytes(context.slate);
    bytes += context.slate.targets.rows.byteLength + context.slate.targets.starts.byteLength;
  }
  return bytes;
}

function matrixBytes(matrix: ExecutionContext['matrix']): number {
  let bytes = matrix.layout.arenaBytes(matrix.rowCount);
  for (const column of matrix.byteColumns) {
    if (column.cells) for (const cell of column.cells) bytes += cell?.byteLength ?? 0;
  }
  for (const strings of matrix.stringColumns) for (const text of strings) bytes += text.length * 2;
  return bytes;
}

/** Message ids are at most 256 characters: a longer tracking id is replaced by its hash. */
const MAX_ID_PREFIX = 200;

/**
 * The bounded, asynchronous path from serving to the queue. `log(context)` decides sampling and
 * buffers the request: it never waits and never throws, and when the buffer is full it drops the
 * request and counts it (full means `maxBuffered` requests or `maxBufferedBytes` bytes, see
 * requestBytes). Background workers build each request's records (planLogBatches), encode
 * and compress them, and write them to the sink with key = tracking id and message id =
 * `<tracking id>:<record index>` (so a retried write is stored once). A failed write is retried
 * `maxAttempts` times, then dropped, counted and logged; a record the queue refuses as too large is
 * split in halves (`<id>.0`, `<id>.1`). `close()` flushes what is buffered within a timeout.
 *
 * Metrics: orchestrator_inference_log_requests_total (requests buffered), _records_total
 * (records written), _dropped_total{reason}, _publish_errors_total (failed attempts),
 * _buffer_depth, _buffer_bytes.
 */
export class InferenceLogger {
  private readonly sink: LogSink;
  private readonly logger: Logger;
  private readonly maxBuffered: number;
  private readonly maxBufferedBytes: number;
  private heldBytes = 0;
  private readonly maxAttempts: number;
  private readonly backoff: readonly number[];
  private readonly writeTimeoutMs: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly buffer: (Pending | undefined)[] = [];
  private head = 0;
  private inFlight = 0;
  private closing = false;
  private stopped = false;
  private readonly wakeups: (() => void)[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private readonly requests: CounterMetric;
  private readonly records: CounterMetric;
  private readonly dropped: CounterMetric;
  private readonly publishErrors: CounterMetric;
  private readonly depth: GaugeMetric;
  private readonly depthBytes: GaugeMetric;

  constructor(options: InferenceLoggerOptions) {
    this.sink = options.sink;
    this.logger = options.logger;
    this.maxBuffered = Math.max(1, options.maxBuffered ?? 1000);
    this.maxBufferedBytes = Math.max(1, options.maxBufferedBytes ?? 32 * 1024 * 1024);
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 3);
    this.backoff = options.retryBackoffMs?.length ? options.retryBackoffMs : [100, 1000];
    this.writeTimeoutMs = options.writeTimeoutMs ?? 10_000;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    const { metrics } = options;
    this.requests = metrics.counter(
      'orchestrator_inference_log_requests_total',
      'Sampled requests taken into the inference log buffer',
      ['model'],
    );
    this.records = metrics.counter(
      'orchestrator_inference_log_records_total',
      'Inference log records written to the queue (or log file)',
      ['model'],
    );
    this.dropped = metrics.counter(
      'orchestrator_inference_log_dropped_total',
      'Inference logs lost: requests (reason buffer_full, shutdown, closed, build_failed) or records (encode_failed, publish_failed, too_large)',
      ['model', 'reason'],
    );
    this.publishErrors = metrics.counter(
      'orchestrator_inference_log_publish_errors_total',
      'Failed attempts to write an inference log record (each retry counts)',
      ['model'],
    );
    this.depth = metrics.gauge(
      'orchestrator_inference_log_buffer_depth',
      'Sampled requests waiting in the inference log buffer',
    );
    this.depthBytes = metrics.gauge(
      'orchestrator_inference_log_buffer_bytes',
      'Bytes of the sampled requests waiting in the inference log buffer',
    );
    // Workers never reject (work() catches everything), so nothing awaits them.
    for (let i = 0; i < Math.max(1, options.concurrency ?? 2); i++) void this.work();
  }

  /** Requests buffered and not yet taken by a worker. */
  get buffered(): number {
    return this.buffer.length - this.head;
  }

  /** Bytes of the buffered requests (requestBytes of each). */
  get bufferedBytes(): number {
    return this.heldBytes;
  }

  /**
   * Offers a served request for logging. Samples it by the model's `logging_perc`, then buffers it,
   * or drops and counts it when the buffer is full. Never blocks, never throws.
   */
  log(context: ExecutionContext): LogOutcome {
    try {
      const model = context.snapshot.id;
      if (!sampleRequest(context.snapshot.model.config.logging.logging_perc, this.random)) {
        return 'not_sampled';
      }
      if (this.closing) {
        this.dropped.inc({ model, reason: 'closed' });
        return 'closed';
      }
      if (this.buffered >= this.maxBuffered) {
        this.dropped.inc({ model, reason: 'buffer_full' });
        return 'dropped';
      }
      const bytes = requestBytes(context);
      if (this.heldBytes + bytes > this.maxBufferedBytes) {
        this.dropped.inc({ model, reason: 'buffer_full' });
        return 'dropped';
      }
      this.buffer.push({ context, createdAtMs: this.now(), bytes });
      this.heldBytes += bytes;
      this.requests.inc({ model });
      this.depth.set({}, this.buffered);
      this.depthBytes.set({}, this.heldBytes);
      // Wake a worker two turns of the event loop from now, never as a microtask: encoding then
      // runs after this request's response and also its trailers have left (HTTP/2 writes the
      // trailers on the turn after the response), so no caller waits for it.
      const wake = this.wakeups.shift();
      if (wake) setImmediate(onNextTurn, wake);
      return 'queued';
    } catch (err) {
      // Logging must never fail a request, whatever went wrong here.
      this.logger.error({ err: describeError(err) }, 'inference log: could not buffer a request');
      return 'dropped';
    }
  }

  /**
   * Stops taking requests and waits up to `timeoutMs` for the buffer to be written. Requests still
   * buffered then are dropped (counted, reason shutdown). Returns how many were dropped.
   */
  async close(timeoutMs = 5000): Promise<{ dropped: number }> {
    this.closing = true;
    for (const wake of this.wakeups.splice(0)) wake();
    if (this.buffered > 0 || this.inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.drainWaiters.push(resolve)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    }
    this.stopped = true;
    let dropped = 0;
    while (this.buffered > 0) {
      const pending = this.take()!;
      this.dropped.inc({ model: pending.context.snapshot.id, reason: 'shutdown' });
      dropped++;
    }
    this.depth.set({}, 0);
    this.depthBytes.set({}, 0);
    for (const wake of this.wakeups.splice(0)) wake();
    if (dropped > 0 || this.inFlight > 0) {
      this.logger.warn(
        { dropped, inFlight: this.inFlight, sink: this.sink.description },
        `inference log: closing after ${timeoutMs} ms with ${dropped} requests unwritten`,
      );
    }
    await this.sink.close().catch((err: unknown) => {
      this.logger.warn({ err: describeError(err) }, 'inference log: closing the sink failed');
    });
    return { dropped };
  }

  private take(): Pending | undefined {
    if (this.head >= this.buffer.length) return undefined;
    const pending = this.buffer[this.head];
    this.buffer[this.head++] = undefined;
    if (pending) this.heldBytes -= pending.bytes;
    // Compact now and then so the array does not grow with every request ever logged.
    if (this.head > 1024 && this.head * 2 > this.buffer.length) {
      this.buffer.splice(0, this.head);
      this.head = 0;
    }
    return pending;
  }

  private async work(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const pending = this.take();
      if (!pending) {
        if (this.closing) return;
        await new Promise<void>((resolve) => this.wakeups.push(resolve));
        continue;
      }
      this.depth.set({}, this.buffered);
      this.depthBytes.set({}, this.heldBytes);
      this.inFlight++;
      try {
        await this.writeRequest(pending);
      } catch (err) {
        this.dropped.inc({ model: pending.context.snapshot.id, reason: 'build_failed' });
        this.logger.error(
          {
            err: describeError(err),
            model: pending.context.snapshot.id,
            trackingId: pending.context.trackingId,
          },
          'inference log: could not build the records of a request',
        );
      } finally {
        this.inFlight--;
        if (this.buffered === 0 && this.inFlight === 0)
          for (const done of this.drainWaiters.splice(0)) done();
      }
    }
  }

  private async writeRequest(pending: Pending): Promise<void> {
    const { context } = pending;
    // A request without a tracking id still gets one, so its records group and de-duplicate.
    const trackingId = context.trackingId === '' ? randomUUID() : context.trackingId;
    const batches = planLogBatches(context, { createdAtMs: pending.createdAtMs, trackingId });
    const idPrefix =
      trackingId.length <= MAX_ID_PREFIX ? trackingId : createHash('sha256').update(trackingId).digest('hex');
    const logging = context.snapshot.model.config.logging;
    for (const batch of batches) await this.writeBatch(batch, logging, `${idPrefix}:${batch.index}`);
  }

  private async writeBatch(batch: LogBatch, logging: LoggingConfig, messageId: string): Promise<void> {
    const model = batch.request.modelConfigId;
    let bytes: Uint8Array;
    try {
      bytes = OrchestratorLog.encode(await encodeLogBatch(batch, logging)).finish();
    } catch (err) {
      this.dropped.inc({ model, reason: 'encode_failed' });
      this.logger.error(
        { err: describeError(err), model, trackingId: batch.request.trackingId, batch: batch.index },
        'inference log: could not encode a record; dropped',
      );
      return;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        await withTimeout(
          `writing inference log ${messageId} to ${this.sink.description}`,
          this.writeTimeoutMs,
          this.sink.write(bytes, { key: batch.request.trackingId, messageId }),
        );
        this.records.inc({ model });
        return;
      } catch (err) {
        this.publishErrors.inc({ model });
        if (err instanceof MessageTooLargeError) {
          const halves = splitBatch(batch);
          if (halves) {
            await this.writeBatch(halves[0], logging, `${messageId}.0`);
            await this.writeBatch(halves[1], logging, `${messageId}.1`);
            return;
          }
        }
        const final =
          attempt >= this.maxAttempts ||
          err instanceof MessageTooLargeError ||
          isLatticeError(err, 'INVALID_ARGUMENT') ||
          this.stopped;
        if (final) {
          const reason = err instanceof MessageTooLargeError ? 'too_large' : 'publish_failed';
          this.dropped.inc({ model, reason });
          this.logger.warn(
            { err: describeError(err), model, messageId, attempts: attempt, sink: this.sink.description },
            `inference log: dropped a record after ${attempt} attempts`,
          );
          return;
        }
        await sleep(this.backoff[Math.min(attempt - 1, this.backoff.length - 1)]!);
      }
    }
  }
}

function onNextTurn(run: () => void): void {
  setImmediate(run);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
