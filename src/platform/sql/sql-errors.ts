/**
 * One mapping from database and network failures to LatticeError codes, shared by both adapters so
 * callers can branch on `code` whatever the database: PostgreSQL and PGlite report the same SQLSTATEs.
 */
import { type ErrorCode, LatticeError } from '../errors.js';

interface DriverError {
  message: string;
  code?: unknown;
  detail?: unknown;
}

const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** SQLSTATE → code. Classes: https://www.postgresql.org/docs/current/errcodes-appendix.html */
function codeForSqlState(state: string): ErrorCode {
  if (state === '23505') return 'ALREADY_EXISTS';
  if (state === '40001' || state === '40P01') return 'ABORTED'; // serialization failure, deadlock: retry
  if (state === '57014') return 'DEADLINE_EXCEEDED'; // statement_timeout or cancel
  if (state === '53300' || state === '57P01' || state === '57P02' || state === '57P03') return 'UNAVAILABLE';
  if (state.startsWith('08')) return 'UNAVAILABLE'; // connection exception
  if (state.startsWith('53')) return 'RESOURCE_EXHAUSTED';
  if (state.startsWith('22')) return 'INVALID_ARGUMENT'; // data exception: a value the column refuses
  if (state.startsWith('23')) return 'FAILED_PRECONDITION'; // other integrity constraints
  return 'INTERNAL'; // syntax errors, undefined tables/columns, ...: a bug in the statement
}

function isSqlState(code: unknown): code is string {
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

function asDriverError(err: unknown): DriverError {
  if (err instanceof AggregateError && err.errors[0] instanceof Error) {
    // Node's connect tries every address of a host name and reports them together.
    const first: DriverError = err.errors[0];
    return { message: err.message || first.message, code: first.code ?? (err as DriverError).code };
  }
  if (err instanceof Error) return err;
  return { message: String(err) };
}

function isConnectionFailure(e: DriverError): boolean {
  if (typeof e.code === 'string' && networkCodes.has(e.code)) return true;
  // pg's own messages when a connection cannot be made or is lost.
  return /timeout exceeded when trying to connect|connection terminated|connection timeout|terminated unexpectedly|Connection ended unexpectedly/i.test(
    e.message,
  );
}

/**
 * Turns anything a driver throws into a LatticeError. `server` names the database ("PostgreSQL at
 * 127.0.0.1:5432") so that an UNAVAILABLE message says which address to check.
 */
export function toSqlError(err: unknown, server: string): LatticeError {
  if (err instanceof LatticeError) return err;
  const e = asDriverError(err);
  if (isSqlState(e.code)) {
    const code = codeForSqlState(e.code);
    const detail = typeof e.detail === 'string' && e.detail !== '' ? ` (${e.detail})` : '';
    return new LatticeError(code, `${e.message}${detail} [SQLSTATE ${e.code}]`, { cause: err });
  }
  if (/Query read timeout/i.test(e.message)) {
    // pg's client-side query_timeout: the server stopped answering a statement.
    return new LatticeError('DEADLINE_EXCEEDED', `${server} did not answer in time: ${e.message}`, {
      cause: err,
    });
  }
  if (isConnectionFailure(e)) {
    return new LatticeError('UNAVAILABLE', `${server} is unavailable: ${e.message}`, { cause: err });
  }
  return new LatticeError('INTERNAL', `${server}: ${e.message}`, { cause: err });
}
