import type { Server } from '@grpc/grpc-js';

/**
 * grpc-js (through 1.14.7) parses the `grpc-timeout` header with `| 0`, so a deadline between about
 * 24.8 and 49.7 days overflows to a negative timeout and the call fails at once with
 * DEADLINE_EXCEEDED (and one beyond wraps to a short one). Node's timers cannot wait longer than
 * 2^31 - 1 ms either. This rewrites, before grpc-js reads it, any timeout above that bound to the
 * bound: such a call gets about 24.8 days, which no client can tell from its own longer deadline.
 */
export const MAX_TIMEOUT_HEADER = '2147483S';
const MAX_TIMEOUT_MS = 2_147_483_000;
const TIMEOUT = /^(\d{1,8})\s*([HMSmun])$/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** The header value a server should act on: `value` itself, or the bound when it is longer. */
export function clampTimeoutHeader(value: string): string {
  // Milli-, micro- and nanoseconds in at most 8 digits never pass the bound: the unit every client
  // uses for deadlines under 27 hours, so the common call costs one character test.
  const unit = value.charCodeAt(value.length - 1);
  if (unit === 109 /* m */ || unit === 117 /* u */ || unit === 110 /* n */) return value;
  const match = TIMEOUT.exec(value.trim());
  if (!match) return value; // grpc-js rejects it itself
  return Number(match[1]) * UNIT_MS[match[2]!]! > MAX_TIMEOUT_MS ? MAX_TIMEOUT_HEADER : value;
}

interface StreamSource {
  prependListener(
    event: 'stream',
    listener: (stream: unknown, headers: Record<string, unknown>) => void,
  ): void;
}

/**
 * Installs the clamp on every HTTP/2 server a bound grpc-js Server listens with. grpc-js keeps them
 * in a private map; when a release renames it this throws, and the test pinning the 30-day deadline
 * tells which release fixed or moved it.
 */
export function installDeadlineClamp(server: Server): void {
  const servers = (server as unknown as { http2Servers?: Map<StreamSource, unknown> }).http2Servers;
  if (!(servers instanceof Map)) {
    throw new Error('grpc-js internals changed: Server.http2Servers is gone (deadline clamp)');
  }
  for (const http2Server of servers.keys()) {
    // Prepended, so it runs before grpc-js's own 'stream' listener reads the same headers object.
    http2Server.prependListener('stream', (_stream, headers) => {
      const timeout = headers['grpc-timeout'];
      if (typeof timeout === 'string') headers['grpc-timeout'] = clampTimeoutHeader(timeout);
    });
  }
}
