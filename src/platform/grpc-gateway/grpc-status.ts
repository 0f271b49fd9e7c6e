/**
 * A gRPC status as the ops server's JSON APIs answer errors: the code's name and the HTTP status the
 * admin API gives it (http/status.ts), through the Lattice error code grpc/status.ts maps to that gRPC
 * code, so the three transports keep one table. The four gRPC codes no Lattice error has (grpc-js or
 * a peer may still answer them) get the status grpc-gateway gives them.
 */
import { status } from '@grpc/grpc-js';
import type { ErrorCode } from '../errors.js';
import { grpcStatusOf } from '../grpc/status.js';
import { type HttpErrorBody, httpStatusOf } from '../http/status.js';

const latticeCodeOf = new Map<number, ErrorCode>(
  Object.entries(grpcStatusOf).map(([code, grpcCode]) => [grpcCode, code as ErrorCode]),
);

const OTHER_CODES: Readonly<Record<number, { code: string; http: number }>> = {
  [status.UNKNOWN]: { code: 'UNKNOWN', http: 500 },
  [status.OUT_OF_RANGE]: { code: 'OUT_OF_RANGE', http: 400 },
  [status.UNIMPLEMENTED]: { code: 'UNIMPLEMENTED', http: 501 },
  [status.DATA_LOSS]: { code: 'DATA_LOSS', http: 500 },
};

/** The HTTP status and error body of a call answered with gRPC `code`, its message and `field` trailer. */
export function httpErrorOfGrpc(
  code: number,
  message: string,
  field?: string,
): { status: number; body: HttpErrorBody } {
  const lattice = latticeCodeOf.get(code);
  const { code: name, http } =
    lattice !== undefined
      ? { code: lattice, http: httpStatusOf[lattice] }
      : (OTHER_CODES[code] ?? { code: 'UNKNOWN', http: 500 });
  const body: HttpErrorBody = { error: { code: name, message } };
  if (field) body.error.field = field;
  return { status: http, body };
}
