import { ConsecutiveBreaker, circuitBreaker, ExponentialBackoff, handleWhen } from 'cockatiel';
import {
  Etcd3,
  EtcdPermissionDeniedError,
  GRPCDeadlineExceededError,
  GRPCUnauthenticatedError,
  type IKeyValue,
  isRecoverableError,
  type Namespace,
  Range,
} from 'etcd3';
import { type ErrorCode, invalidArgument, LatticeError } from '../../errors.js';
import { withTimeout } from '../../timeout.js';
import type {
  ConfigEntry,
  ConfigEvent,
  ConfigListener,
  ConfigListOptions,
  ConfigStore,
  ConfigWatch,
  ConfigWatchOptions,
} from '../config-store.js';
import { parseDocument, serializeDocument } from '../documents.js';
import { ConfigEventSink } from '../event-sink.js';
import { assertKey, assertPrefix, keyProblem } from '../keys.js';
import { EtcdConfigWatch, type EtcdSnapshot } from './etcd-config-watch.js';

export interface EtcdConfigStoreOptions {
  /** Client URLs (`http://127.0.0.1:2379`, or `host:port`, taken as http). */
  readonly endpoints: readonly string[];
  /** Namespace for every key, e.g. `lattice/`; a missing trailing slash is added. Default none. */
  readonly prefix?: string;
  /** Deadline for connecting: `connect()`'s check and setting up a watch. Default 5000. */
  readonly dialTimeoutMs?: number;
  /** Deadline for each get, list, put and delete. Default 5000. */
  readonly requestTimeoutMs?: number;
}

/** Keys per range request when reading a prefix; the pages are read at one revision. */
const PAGE_SIZE = 500;

/**
 * The distributed ConfigStore: etcd v3, one JSON text value per key, under an optional namespace
 * prefix. Revisions are etcd's mod_revision. Every call has a deadline; watches survive server
 * restarts (see `EtcdConfigWatch`).
 */
export class EtcdConfigStore implements ConfigStore {
  /** Creates a store and checks that etcd answers within `dialTimeoutMs`. */
  static async connect(options: EtcdConfigStoreOptions): Promise<EtcdConfigStore> {
    const store = new EtcdConfigStore(options);
    try {
      await store.call(
        'connect',
        store.dialTimeoutMs,
        () => store.client.maintenance.status(),
        'UNAVAILABLE',
      );
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  readonly endpoints: readonly string[];
  readonly prefix: string;
  /** `etcd at <endpoints>`: how errors name this store. */
  readonly location: string;
  private readonly dialTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly client: Etcd3;
  private readonly kv: Namespace;
  private readonly watches = new Set<EtcdConfigWatch>();
  private closed = false;

  /** Creates a store that connects on first use; prefer `connect()`, which checks the server. */
  constructor(options: EtcdConfigStoreOptions) {
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw invalidArgument('etcd config store: endpoints must list at least one URL', 'endpoints');
    }
    this.endpoints = options.endpoints.map(normalizeEndpoint);
    const prefix = options.prefix ?? '';
    this.prefix = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
    this.location = `etcd at ${this.endpoints.join(', ')}`;
    this.dialTimeoutMs = options.dialTimeoutMs ?? 5000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5000;
    const requestTimeoutMs = this.requestTimeoutMs;
    const watchBackoff = new ExponentialBackoff({ initialDelay: 100, maxDelay: 2000 });
    this.client = new Etcd3({
      hosts: [...this.endpoints],
      // gRPC enforces the same deadline, so an abandoned call does not linger after our timeout.
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
      grpcOptions: {
        // Reconnect soon after a server restart instead of grpc's default backoff of up to 2 minutes.
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 2000,
        // Notice a silently dead connection under a long-lived watch (etcd allows pings every 5 s).
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
      },
      faultHandling: {
        host: () =>
          circuitBreaker(handleWhen(isRecoverableError), {
            halfOpenAfter: 1000,
            breaker: new ConsecutiveBreaker(3),
          }),
        // etcd3 calls next() on this to start each backoff sequence (its typing says IBackoff).
        watchBackoff: { duration: 0, next: () => watchBackoff.next() },
      },
    });
    this.kv = this.prefix === '' ? this.client : this.client.namespace(this.prefix);
  }

  async get(key: string): Promise<ConfigEntry | undefined> {
    this.assertOpen();
    assertKey(key);
    const res = await this.call(`get ${JSON.stringify(key)}`, this.requestTimeoutMs, () =>
      this.kv.get(key).exec(),
    );
    const [kv] = res.kvs;
    if (kv === undefined) return undefined;
    const event = this.toEvent(kv);
    if (event.type === 'invalid') {
      throw new LatticeError('INVALID_ARGUMENT', `config key ${JSON.stringify(key)}: ${event.reason}`, {
        field: key,
      });
    }
    return { key, value: event.type === 'put' ? event.value : undefined, revision: event.revision };
  }

  async list(prefix: string, options: ConfigListOptions = {}): Promise<ConfigEntry[]> {
    this.assertOpen();
    assertPrefix(prefix);
    const snapshot = await this.readSnapshot(prefix);
    const entries: ConfigEntry[] = [];
    for (const kv of snapshot.kvs) {
      const event = this.toEvent(kv);
      if (event.type === 'put')
        entries.push({ key: event.key, value: event.value, revision: event.revision });
      else if (event.type === 'invalid') options.onInvalid?.(event);
    }
    return entries;
  }

  async put(key: string, value: unknown): Promise<number> {
    this.assertOpen();
    assertKey(key);
    const text = serializeDocument(key, value, false);
    const res = await this.call(`put ${JSON.stringify(key)}`, this.requestTimeoutMs, () =>
      this.kv.put(key).value(text).exec(),
    );
    return Number(res.header.revision);
  }

  async delete(key: string): Promise<boolean> {
    this.assertOpen();
    assertKey(key);
    const res = await this.call(`delete ${JSON.stringify(key)}`, this.requestTimeoutMs, () =>
      this.kv.delete().key(key).exec(),
    );
    return res.deleted !== '0';
  }

  async watch(
    prefix: string,
    listener: ConfigListener,
    options: ConfigWatchOptions = {},
  ): Promise<ConfigWatch> {
    this.assertOpen();
    assertPrefix(prefix);
    const watch = new EtcdConfigWatch({
      kv: this.kv,
      prefix,
      sink: new ConfigEventSink(listener, options.onError),
      location: this.location,
      connectTimeoutMs: this.dialTimeoutMs,
      readSnapshot: (p) => this.readSnapshot(p),
      toEvent: (kv) => this.toEvent(kv),
      onClose: () => this.watches.delete(watch),
    });
    this.watches.add(watch);
    await watch.start(options.initial === true);
    return watch;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.watches].map((watch) => watch.close()));
    this.client.close();
  }

  /** Every key-value under `prefix` at one revision, read in pages. */
  private readSnapshot(prefix: string): Promise<EtcdSnapshot> {
    return this.call(`list ${JSON.stringify(prefix)}`, this.requestTimeoutMs, async () => {
      const range = Range.prefix(prefix);
      const kvs: IKeyValue[] = [];
      let start = range.start;
      let revision: string | undefined;
      for (;;) {
        const builder = this.kv.getAll().inRange({ start, end: range.end }).limit(PAGE_SIZE);
        const res = await (revision === undefined ? builder : builder.revision(revision)).exec();
        revision ??= res.header.revision;
        kvs.push(...res.kvs);
        const last = res.kvs[res.kvs.length - 1];
        if (!res.more || last === undefined) return { kvs, revision: Number(revision) };
        start = Buffer.concat([last.key, Buffer.from([0])]);
      }
    });
  }

  /** The event a key-value stands for: a `put` of its JSON value, or `invalid` saying what is wrong. */
  private toEvent(kv: IKeyValue): ConfigEvent {
    const key = kv.key.toString('utf8');
    const revision = Number(kv.mod_revision);
    const where = `etcd key ${JSON.stringify(this.prefix + key)} (${this.location})`;
    const problem = keyProblem(key);
    if (problem !== undefined)
      return { type: 'invalid', key, reason: `${where} is not a valid key: it ${problem}`, revision };
    const parsed = parseDocument(kv.value.toString('utf8'), 'json');
    if (!parsed.ok) return { type: 'invalid', key, reason: `${where}: ${parsed.reason}`, revision };
    return { type: 'put', key, value: parsed.value, revision };
  }

  /** Runs one etcd call with a deadline, turning its failure into an error that names the server. */
  private async call<T>(
    what: string,
    timeoutMs: number,
    work: () => Promise<T>,
    timeoutCode: 'UNAVAILABLE' | 'DEADLINE_EXCEEDED' = 'DEADLINE_EXCEEDED',
  ): Promise<T> {
    try {
      return await withTimeout(`${this.location}: ${what}`, timeoutMs, work, timeoutCode);
    } catch (err) {
      if (err instanceof LatticeError) throw err;
      throw new LatticeError(errorCode(err), `${this.location}: ${what} failed`, { cause: err });
    }
  }

  private assertOpen(): void {
    if (this.closed)
      throw new LatticeError('FAILED_PRECONDITION', `config store (${this.location}) is closed`);
  }
}

function errorCode(err: unknown): ErrorCode {
  if (err instanceof GRPCDeadlineExceededError) return 'DEADLINE_EXCEEDED';
  if (err instanceof EtcdPermissionDeniedError) return 'PERMISSION_DENIED';
  if (err instanceof GRPCUnauthenticatedError) return 'UNAUTHENTICATED';
  return 'UNAVAILABLE'; // connection refused, circuit open, stream reset, ...
}

function normalizeEndpoint(endpoint: string): string {
  const text = String(endpoint).trim();
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    throw invalidArgument(`etcd endpoint ${JSON.stringify(endpoint)} is not a URL or host:port`, 'endpoints');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidArgument(
      `etcd endpoint ${JSON.stringify(endpoint)} must use http:// or https://`,
      'endpoints',
    );
  }
  return `${url.protocol}//${url.hostname}:${url.port || '2379'}`; // hostname keeps IPv6 brackets
}
