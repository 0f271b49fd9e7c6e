/**
 * The deadline of an HTTP/JSON call, from its headers: `X-Lattice-Deadline-Ms` (milliseconds from
 * now), or gRPC's own `grpc-timeout` (an integer of at most 8 digits and a unit: H, M, S, m, u, n),
 * which a gRPC-Web or Envoy client already sends. With both, the sooner wins; with neither, the gRPC
 * server's default deadline (`grpc.defaultDeadlineMs`) applies, as for a gRPC call that sets none.
 */
import { LatticeError } from '../errors.js';

export const DEADLINE_HEADER = 'x-lattice-deadline-ms';
export const GRPC_TIMEOUT_HEADER = 'grpc-timeout';

const UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

type Headers = Readonly<Record<string, string | string[] | undefined>>;

function single(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Milliseconds the call may take, or undefined when no header sets it; a malformed header is INVALID_ARGUMENT. */
export function timeoutMsOf(headers: Headers): number | undefined {
  const found: number[] = [];
  const ms = single(headers, DEADLINE_HEADER);
  if (ms !== undefined) {
    // Up to a 32-bit count of milliseconds (about 24 days): a timer takes no longer one.
    if (!/^\d{1,10}$/.test(ms.trim()) || Number(ms) > 2 ** 31 - 1) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `X-Lattice-Deadline-Ms must be a whole number of milliseconds up to ${2 ** 31 - 1}, not "${ms.slice(0, 40)}"`,
        { field: 'X-Lattice-Deadline-Ms' },
      );
    }
    found.push(Number(ms));
  }
  const timeout = single(headers, GRPC_TIMEOUT_HEADER);
  if (timeout !== undefined) {
    const match = /^(\d{1,8})([HMSmun])$/.exec(timeout.trim());
    if (match === null) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `grpc-timeout must be up to 8 digits and a unit (H, M, S, m, u, n), e.g. 500m, not "${timeout.slice(0, 40)}"`,
        { field: 'grpc-timeout' },
      );
    }
    found.push(Math.min(Number(match[1]) * UNIT_MS[match[2]!]!, 2 ** 31 - 1));
  }
  return found.length === 0 ? undefined : Math.min(...found);
}
