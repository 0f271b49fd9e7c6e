/**
 * The HTTP/JSON form of a part's gRPC services on its process's ops server (platform/grpc-gateway):
 * the orchestrator's Predict and legacy Orchestrator services, vss's SimilaritySearch. `lattice up`,
 * `lattice orchestrator` and `lattice vss` (with serving) register the routes before the ops server
 * listens and point them at the part's gRPC server once that listens.
 */
import type { DescService, FileRegistry } from '@bufbuild/protobuf';
import type { FastifyInstance } from 'fastify';
import { DESCRIPTOR_SET_BASE64 } from '../gen/descriptor-set.js';
import { TIMINGS_KEY } from '../orchestrator/wire/timings-trailer.js';
import { dialTarget } from '../platform/grpc/index.js';
import { descriptorRegistry, type GrpcGateway, registerGrpcGateway } from '../platform/grpc-gateway/index.js';
import { tlsOf } from '../platform/http/index.js';
import type { Settings } from '../platform/settings/index.js';

/** The services each part serves over HTTP/JSON, by their full proto names. */
export const RPC_SERVICES = {
  orchestrator: ['orchestrator.v1.Predict', 'orchestrator.v1.Orchestrator'],
  vss: ['vss.v1.SimilaritySearch'],
} as const;

export type RpcPart = keyof typeof RPC_SERVICES;

/** The HTTP form of the orchestrator's `lattice-timings` metadata and trailer (docs/orchestrator.md). */
export const TIMINGS_HEADER = 'X-Lattice-Timings';

const ORCHESTRATOR_HEADERS = {
  headersToMetadata: [
    {
      header: TIMINGS_HEADER,
      metadata: TIMINGS_KEY,
      description:
        '1 (or true, yes, on) asks for per-component timings of this request, answered in the X-Lattice-Timings response header.',
    },
  ],
  trailersToHeaders: [
    {
      trailer: TIMINGS_KEY,
      header: TIMINGS_HEADER,
      description:
        'when the request carried X-Lattice-Timings: 1, JSON {"total_ms", "components": [{"name", "kind", "start_ms", "duration_ms", "state": "ran"|"failed"|"skipped"|"cancelled"}]} for every component of the model\'s DAG in topological order, in milliseconds from the start of the request; on errors too.',
    },
  ],
};

let registry: FileRegistry | undefined;

function serviceOf(name: string): DescService {
  registry ??= descriptorRegistry(DESCRIPTOR_SET_BASE64);
  const service = registry.getService(name);
  if (service === undefined) throw new Error(`${name} is not in src/gen/descriptor-set.ts`);
  return service;
}

export interface RpcRoutes {
  /** Points the routes at the part's gRPC server, listening on `port` of `settings.host`. */
  serve(port: number): void;
  readonly paths: readonly string[];
}

/** Registers `POST /api/v1/rpc/<service>/<method>` for `part` on an ops server's `app`. */
export function registerRpcRoutes(app: FastifyInstance, settings: Settings, part: RpcPart): RpcRoutes {
  const gateway: GrpcGateway = registerGrpcGateway(app, {
    services: RPC_SERVICES[part].map(serviceOf),
    maxMessageBytes: settings.grpc.maxMessageBytes,
    idHeader: settings.auth.callerIdHeader,
    tokenHeader: settings.auth.callerTokenHeader,
    callerTokens: Object.keys(settings.auth.callerTokens).length > 0,
    tag: part === 'orchestrator' ? 'orchestrator (HTTP/JSON of gRPC)' : 'vss (HTTP/JSON of gRPC)',
    ...(part === 'orchestrator' ? ORCHESTRATOR_HEADERS : {}),
  });
  return {
    paths: gateway.paths,
    serve(port) {
      // The part's servers serve TLS exactly when the process does; it is dialled as its clients dial it.
      const tls = tlsOf(settings);
      const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
      const { target, credentials } = dialTarget(
        `${host}:${port}`,
        tls.server === undefined ? undefined : (tls.client ?? {}),
      );
      gateway.serve({ address: target, credentials });
    },
  };
}
