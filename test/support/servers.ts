/**
 * Real servers for integration and contract tests. On CI (env CI set) a server that cannot be
 * reached fails the run; on a developer machine the test is skipped with the reason printed.
 * Addresses come from the same variables the services use (see docs/configuration.md), with the machine defaults.
 */
import { Socket } from 'node:net';

export type ServerKind = 'postgres' | 'redis' | 'nats' | 'etcd';

export const serverUrls: Record<ServerKind, string> = {
  postgres: process.env.LATTICE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  redis: process.env.LATTICE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
  nats: process.env.LATTICE_TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
  etcd: process.env.LATTICE_TEST_ETCD_URL ?? 'http://127.0.0.1:2379',
};

function tcpReachable(url: string, timeoutMs = 1000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(Number(port), hostname.replace(/^\[|\]$/g, ''), () => done(true));
  });
}

/**
 * Resolves to the server's URL when it is reachable. When it is not: throws on CI, else returns
 * `undefined` after printing why, so the caller passes `{ skip: !url }` to its suite.
 */
export async function realServer(kind: ServerKind): Promise<string | undefined> {
  const url = serverUrls[kind];
  if (await tcpReachable(url)) return url;
  const reason = `${kind} is not reachable at ${url} (start it with scripts/test-services.sh)`;
  if (process.env.CI) throw new Error(`${reason}; CI requires it`);
  console.log(`# skipping ${kind} tests: ${reason}`);
  return undefined;
}

/** Polls `check` until it returns true or `timeoutMs` passes; tests wait on conditions, never on sleeps. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A name unique to this test process, so suites sharing a server never see each other's data. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
}
