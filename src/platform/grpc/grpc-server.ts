import { join } from 'node:path';
import {
  type MethodDefinition,
  Server,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import { LatticeError } from '../errors.js';
import { defaultServerTls } from '../http/default-server-tls.js';
import type { ServerTls } from '../http/tls-material.js';
import type { Logger } from '../logging/index.js';
import type { Metrics } from '../metrics/index.js';
import { packageRoot } from '../package-root.js';
import { Admission, type AdmissionLimits, type Classify } from './admission.js';
import { installDeadlineClamp } from './deadline-clamp.js';
import { type CallerAuthOptions, callerAuthInterceptor, metricsInterceptor } from './interceptors.js';
import { listen } from './listen.js';
import { LocalChannel, type LocalMethod } from './local-channel.js';
import { StartGate } from './start-gate.js';
import { type CallLimits, classifyBySize, InFlightGate, type UnaryHandlers, unary } from './unary.js';
import { tolerantDefinition } from './undecodable-request.js';

/** The project's proto/ folder, the root that reflection loads service descriptions from. */
export const protoRoot = join(packageRoot, 'proto');

export interface GrpcServerOptions {
  /** Names the server in logs and metrics, e.g. `orchestrator`. */
  name: string;
  host: string;
  /** 0 picks a free port; `start()` returns the bound one. */
  port: number;
  logger: Logger;
  metrics: Metrics;
  /** Caller-token auth; off when absent or when no tokens are configured. */
  auth?: CallerAuthOptions;
  maxMessageBytes?: number;
  /** Proto files (relative to proto/) whose services reflection describes. */
  reflectionProtos?: string[];
  /** How long `stop()` lets in-flight calls finish before cancelling them. */
  shutdownGraceMs?: number;
  /** Deadline for calls that carry none (default 30 s). */
  defaultDeadlineMs?: number;
  /** Unary calls running at once before new ones get RESOURCE_EXHAUSTED (default 1024). */
  maxInFlightCalls?: number;
  /** Concurrency and queue of each call class (settings `grpc.admission`; admission.ts's defaults when absent). */
  admission?: AdmissionLimits;
  /** Serve TLS with this; `false` forces plaintext; absent: the process's default (http/default-server-tls.ts). */
  tls?: ServerTls | false;
  /**
   * Bound by `start()` but answering UNAVAILABLE at once (health NOT_SERVING) until `open()`: for a
   * server listening before the rest of its process is ready (start-gate.ts).
   */
  startClosed?: boolean;
}

/**
 * A gRPC server with what every Lattice service needs: the standard health service, server
 * reflection, metrics and optional caller-token auth as interceptors, one error→status mapping,
 * and a shutdown that stops taking calls, drains in-flight ones and only then closes.
 */
export class GrpcServer {
  private readonly server: Server;
  private readonly health = new HealthImplementation({ '': 'NOT_SERVING' });
  private readonly serviceNames: string[] = [];
  private boundPort: number | undefined;
  private stopping: Promise<void> | undefined;
  private readonly limits: CallLimits;
  private readonly tls: ServerTls | undefined;
  private readonly gate: StartGate;
  /** The unary methods by path, for callers in this process (localChannel). */
  private readonly localMethods = new Map<string, LocalMethod>();

  constructor(private readonly options: GrpcServerOptions) {
    this.tls = options.tls === undefined ? defaultServerTls() : options.tls || undefined;
    this.gate = new StartGate(options.name);
    if (!options.startClosed) this.gate.open();
    this.limits = {
      defaultDeadlineMs: options.defaultDeadlineMs ?? 30_000,
      inFlight: new InFlightGate(options.maxInFlightCalls ?? 1024),
      admission: new Admission(options.name, options.admission),
    };
    const interceptors = [metricsInterceptor(options.metrics, options.name)];
    if (options.startClosed) interceptors.push(this.gate.interceptor);
    if (options.auth && Object.keys(options.auth.tokens).length > 0) {
      interceptors.push(callerAuthInterceptor(options.auth));
    }
    const maxBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
    this.server = new Server({
      interceptors,
      // Channelz bookkeeping (per-call counters and traces) costs every call and nothing here serves it.
      'grpc.enable_channelz': 0,
      'grpc.max_receive_message_length': maxBytes,
      'grpc.max_send_message_length': maxBytes,
    });
    this.health.addToServer(this.server);
    if (options.reflectionProtos && options.reflectionProtos.length > 0) {
      const definition = loadSync(options.reflectionProtos, { includeDirs: [protoRoot] });
      new ReflectionService(definition).addToServer(this.server);
    }
  }

  /**
   * Registers a service whose methods are promise-returning unary handlers. `classify` tells its
   * heavy calls from its light ones (admission.ts); by default only requests decoded in slices are heavy.
   */
  addUnaryService<D extends ServiceDefinition>(
    definition: D,
    handlers: UnaryHandlers<D>,
    classify: Classify = classifyBySize,
  ): void {
    const implementation: UntypedServiceImplementation = {};
    for (const [name, method] of Object.entries(definition) as [
      string,
      MethodDefinition<unknown, unknown>,
    ][]) {
      const handler = (handlers as Record<string, Parameters<typeof unary>[1]>)[name];
      if (!handler) throw new LatticeError('INTERNAL', `no handler for ${method.path}`);
      implementation[name] = unary(
        method.path,
        handler,
        (err, path) => this.options.logger.error({ err, method: path }, 'unexpected error in gRPC handler'),
        this.limits,
        classify,
      );
    }
    // Undecodable request bytes reach the handler wrapper as a value, answered INVALID_ARGUMENT.
    const tolerant = tolerantDefinition(definition);
    for (const [name, method] of Object.entries(tolerant) as [string, MethodDefinition<unknown, unknown>][]) {
      this.localMethods.set(method.path, {
        handle: implementation[name] as LocalMethod['handle'],
        definition: method,
      });
    }
    this.addService(tolerant, implementation);
  }

  /** Registers a service with raw grpc-js handlers (streaming, or generated server interfaces). */
  addService(definition: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    this.server.addService(definition, implementation);
    const first = Object.values(definition)[0];
    const serviceName = first?.path.split('/')[1];
    if (serviceName) this.serviceNames.push(serviceName);
  }

  /**
   * Binds and starts serving; resolves to the bound port. Health turns SERVING for every service
   * (with `startClosed`, at `open()`).
   */
  async start(): Promise<number> {
    const { host, port, name } = this.options;
    this.boundPort = await listen(this.server, { name, host, port, tls: this.tls });
    // Before any call: the continuation runs before grpc-js reads the first stream.
    installDeadlineClamp(this.server);
    if (this.gate.isOpen) this.setServing();
    this.options.logger.info(
      { address: `${host}:${this.boundPort}`, tls: describeTls(this.tls), services: this.serviceNames },
      `${name} gRPC listening`,
    );
    return this.boundPort;
  }

  /** Opens a `startClosed` server: calls are served and health turns SERVING. */
  open(): void {
    if (this.gate.isOpen || this.stopping) return;
    this.gate.open();
    this.setServing();
  }

  private setServing(): void {
    this.health.setStatus('', 'SERVING');
    for (const service of this.serviceNames) this.health.setStatus(service, 'SERVING');
  }

  /**
   * Its unary methods for callers in this process, without the network (local-channel.ts), once it
   * has started: same handlers, admission and deadlines. Undefined when caller-token auth is on (a
   * LocalChannel skips interceptors, so it would skip the token check).
   */
  localChannel(): LocalChannel | undefined {
    if (this.boundPort === undefined) return undefined;
    if (this.options.auth && Object.keys(this.options.auth.tokens).length > 0) return undefined;
    const { name, host } = this.options;
    return new LocalChannel(`${host.includes(':') ? `[${host}]` : host}:${this.boundPort}`, {
      method: (path) => this.localMethods.get(path),
      notServing: () =>
        this.stopping
          ? `${name} is shutting down`
          : this.gate.isOpen
            ? undefined
            : `${name} is starting and not serving yet; try again shortly`,
    });
  }

  /** Whether it serves TLS. */
  get secure(): boolean {
    return this.tls !== undefined;
  }

  get port(): number | undefined {
    return this.boundPort;
  }

  /**
   * Stops taking new calls (health NOT_SERVING first, so balancers move away), waits up to the grace
   * period for in-flight calls to finish, then cancels what is left. Safe to call more than once.
   */
  stop(graceMs = this.options.shutdownGraceMs ?? 10_000): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      this.health.setStatus('', 'NOT_SERVING');
      for (const service of this.serviceNames) this.health.setStatus(service, 'NOT_SERVING');
      const timer = setTimeout(() => {
        this.options.logger.warn(
          { graceMs },
          `${this.options.name}: calls still running after the grace period; cancelling them`,
        );
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      timer.unref();
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.stopping;
  }
}

/** How a server's TLS reads in its start-up log line. */
function describeTls(tls: ServerTls | undefined): string {
  if (tls === undefined) return 'off';
  return tls.clientAuth === 'off' ? 'on' : `on, client certificates ${tls.clientAuth}`;
}
