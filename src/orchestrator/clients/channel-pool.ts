import { type ChannelCredentials, type ChannelOptions, Client, credentials } from '@grpc/grpc-js';
import { LatticeError } from '../../platform/errors.js';
import type { LocalChannel } from '../../platform/grpc/index.js';

export interface ChannelPoolOptions {
  /**
   * Channels (each its own HTTP/2 connection) per target, used round-robin; default 1. One
   * connection multiplexes concurrent calls and batches their frames into fewer writes; a second
   * connection only pays where a server caps streams per connection or serves each on one thread.
   */
  channelsPerTarget?: number;
  /** Default: plaintext, as the feature stores and model servers of a cluster usually speak. */
  credentials?: ChannelCredentials;
  /** Merged over the defaults below, e.g. to raise the message size limit. */
  channelOptions?: ChannelOptions;
  /**
   * Servers of this process by the target (`host:port`) that names them: calls to such a target
   * take its LocalChannel, without the network (platform/grpc/local-channel.ts).
   */
  local?: Iterable<LocalChannel>;
}

/**
 * Keepalive pings only while calls are in flight (servers built on gRPC core and grpc-go answer
 * pings on idle connections with GOAWAY too_many_pings); a short maximum reconnect backoff so a
 * restarted server is used again within seconds; round_robin over every address a name resolves
 * to (a headless service's pods). The local subchannel pool gives each channel its own connection:
 * grpc-js would otherwise share one connection among all channels with equal options.
 */
const defaultChannelOptions: ChannelOptions = {
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 0,
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 5_000,
  'grpc.use_local_subchannel_pool': 1,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
  // Channelz bookkeeping (per-call counters and traces) costs every call and nothing here serves it.
  'grpc.enable_channelz': 0,
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
};

interface PoolEntry {
  readonly clients: readonly Client[];
  next: number;
}

/**
 * Pooled gRPC channels, one small set per target (`host:port`), shared by every component and every
 * client of the process. Entries are created on first use, so a model config that names a new
 * endpoint after a reload simply gets a new entry; nothing is bound to a config version. Clients are
 * plain grpc-js `Client`s: callers pass the generated method definitions (path and codecs).
 */
export class ChannelPool {
  private readonly entries = new Map<string, PoolEntry>();
  private readonly perTarget: number;
  private readonly credentials: ChannelCredentials;
  private readonly channelOptions: ChannelOptions;
  private readonly local: ReadonlyMap<string, LocalChannel>;
  private closed = false;

  constructor(options: ChannelPoolOptions = {}) {
    this.perTarget = options.channelsPerTarget ?? 1;
    if (!Number.isInteger(this.perTarget) || this.perTarget < 1 || this.perTarget > 64) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `channelsPerTarget must be an integer in 1..64, got ${this.perTarget}`,
        { field: 'channelsPerTarget' },
      );
    }
    this.credentials = options.credentials ?? credentials.createInsecure();
    this.channelOptions = { ...defaultChannelOptions, ...options.channelOptions };
    this.local = new Map([...(options.local ?? [])].map((channel) => [channel.address, channel]));
  }

  /**
   * The next client for `target`, round-robin over its channels (created on first use); the server's
   * LocalChannel when `target` names a server of this process.
   */
  client(target: string): Client | LocalChannel {
    if (this.closed) throw new LatticeError('UNAVAILABLE', `channel pool is closed (target ${target})`);
    const local = this.local.get(target);
    if (local) return local;
    let entry = this.entries.get(target);
    if (!entry) {
      if (target.trim() === '' || /\s/.test(target)) {
        throw new LatticeError('INVALID_ARGUMENT', `invalid gRPC target "${target}", expected host:port`, {
          field: 'target',
        });
      }
      const clients: Client[] = [];
      for (let i = 0; i < this.perTarget; i++) {
        clients.push(new Client(target, this.credentials, this.channelOptions));
      }
      entry = { clients, next: 0 };
      this.entries.set(target, entry);
    }
    const client = entry.clients[entry.next]!;
    entry.next = (entry.next + 1) % entry.clients.length;
    return client;
  }

  /** Whether `target` names a server of this process (called through its LocalChannel). */
  isLocal(target: string): boolean {
    return this.local.has(target);
  }

  /** Targets with open channels, in first-use order. */
  targets(): string[] {
    return [...this.entries.keys()];
  }

  /** Closes every channel; later `client()` calls throw UNAVAILABLE. */
  close(): void {
    this.closed = true;
    for (const entry of this.entries.values()) for (const client of entry.clients) client.close();
    this.entries.clear();
  }
}
