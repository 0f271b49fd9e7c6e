import { NumerixService } from '../../gen/numerix/numerix.js';
import type { ConfigStore } from '../../platform/config-store/index.js';
import {
  type AdmissionLimits,
  type CallerAuthOptions,
  GrpcServer,
  type LocalChannel,
  type UnaryHandlers,
} from '../../platform/grpc/index.js';
import { createLogger, type Logger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { EXPRESSIONS_PREFIX, ExpressionRegistry } from './expression-registry.js';
import { computeNumerix, type ExpressionLookup } from './numerix-compute.js';

export interface NumerixHandlerOptions {
  lookup: ExpressionLookup;
  logger: Logger;
  metrics: Metrics;
}

/**
 * `numerix.Numerix` handlers. Every outcome, failures included, is an OK response (failures in the
 * `error` arm), as numerix clients expect; the outcome is counted per configured compute_id.
 */
export function numerixHandlers(options: NumerixHandlerOptions): UnaryHandlers<typeof NumerixService> {
  const { lookup, logger, metrics } = options;
  const requests = metrics.counter(
    'compute_requests_total',
    'numerix Compute calls, by compute_id (empty when not configured) and outcome',
    ['compute_id', 'outcome'],
  );
  const scored = metrics.counter('compute_rows_total', 'Rows scored by numerix Compute', ['compute_id']);
  return {
    compute: async (request) => {
      const result = computeNumerix(request, lookup);
      // Only configured ids become labels, so callers cannot grow the series without bound.
      const computeId = result.expression?.computeId ?? '';
      requests.inc({ compute_id: computeId, outcome: result.outcome });
      if (result.rows > 0) scored.inc({ compute_id: computeId }, result.rows);
      if (result.response.error) {
        logger.debug(
          {
            computeId: request.entityScoreData?.computeId,
            outcome: result.outcome,
            reason: result.response.error.message,
          },
          'numerix compute answered with an error',
        );
      }
      return result.response;
    },
  };
}

export interface ComputeServerOptions {
  /** Where the expressions live, one document per compute_id under `prefix`; not closed by `stop()`. */
  store: ConfigStore;
  host: string;
  /** 0 picks a free port; the bound one is returned. */
  port: number;
  /** Default: a `compute` logger at info level. */
  logger?: Logger;
  /** Default: a metrics registry of its own (no StatsD). */
  metrics?: Metrics;
  /** Config store prefix of the expression documents; default `compute/`. */
  prefix?: string;
  /** Caller-token auth; off when absent or without tokens. */
  auth?: CallerAuthOptions;
  maxMessageBytes?: number;
  /** How long `stop()` lets in-flight calls finish before cancelling them. */
  shutdownGraceMs?: number;
  /** Deadline of calls that carry none (GrpcServer's default when unset). */
  defaultDeadlineMs?: number;
  /** Unary calls in flight before RESOURCE_EXHAUSTED (GrpcServer's default when unset). */
  maxInFlightCalls?: number;
  /** Per-class concurrency and queues (settings `grpc.admission`; GrpcServer's defaults when unset). */
  admission?: AdmissionLimits;
}

export interface ComputeServer {
  /** The bound port. */
  readonly port: number;
  /** The live expressions, for status reporting. */
  readonly registry: ExpressionRegistry;
  /** Its methods for callers in this process, without the network (undefined with caller-token auth). */
  readonly local: LocalChannel | undefined;
  /** Stops taking calls, drains in-flight ones, then stops following the config store. */
  stop(): Promise<void>;
}

/**
 * Serves `numerix.Numerix/Compute` (plus gRPC health and reflection) over the expressions in the
 * config store. Resolves once every stored expression is loaded and the port is bound, so the first
 * call already sees them; rejects (leaving nothing running) when the store or the port is unavailable.
 */
export async function startComputeServer(options: ComputeServerOptions): Promise<ComputeServer> {
  const logger = options.logger ?? createLogger('compute');
  const metrics = options.metrics ?? new Metrics();
  const registry = new ExpressionRegistry({
    store: options.store,
    logger,
    metrics,
    prefix: options.prefix ?? EXPRESSIONS_PREFIX,
  });
  await registry.start();
  const grpc = new GrpcServer({
    name: 'compute',
    host: options.host,
    port: options.port,
    logger,
    metrics,
    auth: options.auth,
    maxMessageBytes: options.maxMessageBytes,
    reflectionProtos: ['numerix/numerix.proto'],
    shutdownGraceMs: options.shutdownGraceMs,
    defaultDeadlineMs: options.defaultDeadlineMs,
    maxInFlightCalls: options.maxInFlightCalls,
    admission: options.admission,
  });
  grpc.addUnaryService(
    NumerixService,
    numerixHandlers({ lookup: (id) => registry.get(id), logger, metrics }),
  );
  let port: number;
  try {
    port = await grpc.start();
  } catch (err) {
    await registry.stop();
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    port,
    registry,
    local: grpc.localChannel(),
    stop: () => {
      stopping ??= grpc.stop().then(() => registry.stop());
      return stopping;
    },
  };
}
