import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { invalidArgument, isLatticeError, type LatticeError } from '../errors.js';

/**
 * Stands in for a request whose bytes did not decode. grpc-js answers a throwing deserializer with
 * INTERNAL "Error deserializing request", but truncated messages, bad lengths and wrong wire types
 * are the client's mistake: `unary` sees this value instead and answers INVALID_ARGUMENT.
 */
export class UndecodableRequest {
  constructor(readonly error: LatticeError) {}
}

/**
 * A method definition may decode its large requests in time slices: requests of at least
 * `slicedFromBytes` are not decoded by the deserializer (which runs in one event-loop turn, before
 * the call has a signal) but handed to `unary` as a {@link DeferredRequest}, which awaits
 * `requestDecodeSliced` under the call's signal and deadline before the handler runs.
 */
export interface SlicedDecoding<Req> {
  slicedFromBytes: number;
  requestDecodeSliced(bytes: Buffer, signal: AbortSignal, deadline: number): Promise<Req>;
}

/** A large request's bytes, to be decoded in slices once the call has its signal (see {@link SlicedDecoding}). */
export class DeferredRequest {
  constructor(
    readonly bytes: Buffer,
    readonly decoding: SlicedDecoding<unknown>,
    private readonly method: MethodDefinition<unknown, unknown>,
  ) {}

  /** The decoded request; a decoding failure is INVALID_ARGUMENT as for small requests, an abort its reason. */
  async decode(signal: AbortSignal, deadline: number): Promise<unknown> {
    try {
      return await this.decoding.requestDecodeSliced(this.bytes, signal, deadline);
    } catch (err) {
      if (isLatticeError(err)) throw err;
      throw undecodable(err, this.method);
    }
  }
}

function undecodable(err: unknown, method: MethodDefinition<unknown, unknown>): LatticeError {
  // A decoder of our own may already say precisely what is wrong.
  if (isLatticeError(err) && err.code === 'INVALID_ARGUMENT') return err;
  const reason = err instanceof Error ? err.message.slice(0, 200) : 'malformed message';
  return invalidArgument(`request bytes do not decode as ${requestTypeOf(method)}: ${reason}`);
}

/**
 * A copy of `definition` whose request deserializers return an UndecodableRequest instead of
 * throwing, and a DeferredRequest for large requests of methods with {@link SlicedDecoding}. The
 * generated definition is left as it is: clients share it.
 */
export function tolerantDefinition<D extends ServiceDefinition>(definition: D): D {
  const copy: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition) as [string, MethodDefinition<unknown, unknown>][]) {
    const decode = method.requestDeserialize;
    const sliced = (method as Partial<SlicedDecoding<unknown>>).requestDecodeSliced
      ? (method as unknown as SlicedDecoding<unknown>)
      : undefined;
    copy[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        if (sliced && bytes.length >= sliced.slicedFromBytes)
          return new DeferredRequest(bytes, sliced, method);
        try {
          return decode(bytes);
        } catch (err) {
          return new UndecodableRequest(undecodable(err, method));
        }
      },
    };
  }
  return copy as D;
}

function requestTypeOf(method: MethodDefinition<unknown, unknown>): string {
  return method.path.slice(1).replace('/', '.') + ' request';
}
