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
 * A copy of `definition` whose request deserializers return an UndecodableRequest instead of
 * throwing. The generated definition is left as it is: clients share it.
 */
export function tolerantDefinition<D extends ServiceDefinition>(definition: D): D {
  const copy: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition) as [string, MethodDefinition<unknown, unknown>][]) {
    const decode = method.requestDeserialize;
    copy[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch (err) {
          // A decoder of our own may already say precisely what is wrong.
          if (isLatticeError(err) && err.code === 'INVALID_ARGUMENT') return new UndecodableRequest(err);
          const reason = err instanceof Error ? err.message.slice(0, 200) : 'malformed message';
          return new UndecodableRequest(
            invalidArgument(`request bytes do not decode as ${requestTypeOf(method)}: ${reason}`),
          );
        }
      },
    };
  }
  return copy as D;
}

function requestTypeOf(method: MethodDefinition<unknown, unknown>): string {
  return method.path.slice(1).replace('/', '.') + ' request';
}
