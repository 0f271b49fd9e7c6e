import { timingSafeEqual } from 'node:crypto';
import {
  type Metadata,
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from '@grpc/grpc-js';
import type { BoundCounter, BoundTiming, Metrics } from '../metrics/index.js';

/** Methods every caller may use without a token: health checks and reflection. */
const openServices = ['/grpc.health.v1.Health/', '/grpc.reflection.'];

export interface CallerAuthOptions {
  /** Caller id → token. */
  tokens: Record<string, string>;
  idHeader: string;
  tokenHeader: string;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function firstString(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}

/** A refusal: the status a call is answered with instead of reaching its handler. */
export interface Refusal {
  code: status;
  details: string;
}

/**
 * An interceptor that reads each call's metadata and answers it with the refusal `refuse` returns,
 * or lets it through when it returns undefined; calls whose method path `exempt` accepts pass as is.
 */
export function refusingInterceptor(
  refuse: (metadata: Metadata) => Refusal | undefined,
  exempt: (path: string) => boolean = () => false,
): ServerInterceptor {
  return (method, call) => {
    if (exempt(method.path)) return new ServerInterceptingCall(call);
    return new ServerInterceptingCall(
      call,
      new ResponderBuilder()
        .withStart((next) => {
          next(
            new ServerListenerBuilder()
              .withOnReceiveMetadata((metadata, nextMetadata) => {
                const refusal = refuse(metadata);
                if (refusal) call.sendStatus(refusal);
                else nextMetadata(metadata);
              })
              .build(),
          );
        })
        .build(),
    );
  };
}

/** Methods every caller may use without a token, and while a server starts: health and reflection. */
export const isOpenMethod = (path: string) => openServices.some((prefix) => path.startsWith(prefix));

/** Rejects calls whose caller-id / caller-token metadata is missing or wrong with UNAUTHENTICATED. */
export function callerAuthInterceptor(options: CallerAuthOptions): ServerInterceptor {
  const idHeader = options.idHeader.toLowerCase();
  const tokenHeader = options.tokenHeader.toLowerCase();
  return refusingInterceptor((metadata) => {
    const callerId = firstString(metadata, idHeader);
    const token = firstString(metadata, tokenHeader);
    if (!callerId || !token) {
      return {
        code: status.UNAUTHENTICATED,
        details: `missing ${!callerId ? idHeader : tokenHeader} metadata`,
      };
    }
    const expected = options.tokens[callerId];
    if (expected === undefined || !sameSecret(expected, token)) {
      return { code: status.UNAUTHENTICATED, details: `caller ${callerId} is not authorized` };
    }
    return undefined;
  }, isOpenMethod);
}

const statusNames = Object.fromEntries(Object.entries(status).map(([name, code]) => [code, name])) as Record<
  number,
  string
>;

/** Counts every call by method and status and records its latency. */
export function metricsInterceptor(metrics: Metrics, serverName: string): ServerInterceptor {
  const calls = metrics.counter('grpc_server_handled_total', 'gRPC calls completed, by method and status', [
    'server',
    'method',
    'code',
  ]);
  const latency = metrics.timing('grpc_server_handling_seconds', 'gRPC call latency until status is sent', [
    'server',
    'method',
  ]);
  // Series bound once per method (and status): no label checks or hashing per call.
  const bound = new Map<string, { latency: BoundTiming; calls: Map<number, BoundCounter> }>();
  const seriesOf = (path: string) => {
    let series = bound.get(path);
    if (!series) {
      series = { latency: latency.bind({ server: serverName, method: path }), calls: new Map() };
      bound.set(path, series);
    }
    return series;
  };
  return (method, call) => {
    const started = performance.now();
    return new ServerInterceptingCall(
      call,
      new ResponderBuilder()
        .withSendStatus((sent, next) => {
          const series = seriesOf(method.path);
          let counter = series.calls.get(sent.code);
          if (!counter) {
            const code = statusNames[sent.code] ?? String(sent.code);
            counter = calls.bind({ server: serverName, method: method.path, code });
            series.calls.set(sent.code, counter);
          }
          counter.inc();
          series.latency.observeMs(performance.now() - started);
          next(sent);
        })
        .build(),
    );
  };
}
