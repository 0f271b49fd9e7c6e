/** Real grpc-js servers on loopback for the outbound client tests, and the clients' shared plumbing. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { Server } from '@grpc/grpc-js';
import {
  type BreakerOptions,
  CallPolicy,
  ChannelPool,
  type RetryOptions,
} from '../../../src/orchestrator/clients/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { listen } from '../../../src/platform/grpc/listen.js';
import { Metrics } from '../../../src/platform/metrics/index.js';

export interface TestServer {
  /** `127.0.0.1:<port>`. */
  target: string;
  stop(): Promise<void>;
}

/** Starts a grpc-js server on 127.0.0.1, port 0, with the services `register` adds. */
export async function startServer(register: (server: Server) => void): Promise<TestServer> {
  const server = new Server();
  register(server);
  const port = await listen(server);
  return {
    target: `127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}

/** A loopback address nothing listens on (a port bound and released again). */
export async function unusedTarget(): Promise<string> {
  const probe = createServer();
  const port = await new Promise<number>((resolve) =>
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    }),
  );
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

export interface Plumbing {
  metrics: Metrics;
  pool: ChannelPool;
  policy: CallPolicy;
  close(): void;
}

/** A pool and a call policy on a fresh metrics registry; retries and breaker tunable per test. */
export function plumbing(
  options: {
    retry?: Partial<RetryOptions>;
    breaker?: Partial<BreakerOptions>;
    channelsPerTarget?: number;
  } = {},
): Plumbing {
  const metrics = new Metrics();
  const pool = new ChannelPool({ channelsPerTarget: options.channelsPerTarget ?? 2 });
  const policy = new CallPolicy({ pool, metrics, retry: options.retry, breaker: options.breaker });
  return { metrics, pool, policy, close: () => pool.close() };
}

/** The value of one sample of the Prometheus exposition, 0 when absent. */
export async function sample(
  metrics: Metrics,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const { body } = await metrics.scrape();
  for (const line of body.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inner = line.slice(name.length + 1, line.lastIndexOf('}'));
    const present = Object.entries(labels).every(([k, v]) => inner.includes(`${k}="${v}"`));
    if (present) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

/** Asserts a LatticeError with `code` whose message matches. */
export async function rejectsWith(promise: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  await assert.rejects(promise, (err) => {
    assert.ok(isLatticeError(err), String(err));
    assert.equal(err.code, code, err.message);
    assert.match(err.message, message);
    return true;
  });
}

/** A deadline `ms` from now. */
export const within = (ms: number) => Date.now() + ms;
