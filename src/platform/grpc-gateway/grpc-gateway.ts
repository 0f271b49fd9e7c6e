/**
 * The HTTP/JSON form of a process's unary gRPC methods on its ops server (issue 39 item 6):
 * `POST /api/v1/rpc/<package.Service>/<Method>`, the body and the answer in the proto3 JSON mapping
 * (proto-json.ts). Each call is made as a real gRPC call to the process's own gRPC server over
 * loopback, with the caller's credentials and deadline: every check a gRPC client meets (caller
 * tokens, the start gate, message size, admission, in-flight limit, validation, default deadline,
 * error-to-status mapping) is met unchanged, so the two forms answer alike by construction. The
 * price is the loopback hop; a LocalChannel would skip it but also the interceptors (auth).
 */
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import {
  type ChannelCredentials,
  Client,
  Metadata,
  type ServiceError,
  type StatusObject,
} from '@grpc/grpc-js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LatticeError } from '../errors.js';
import { boundedText } from '../grpc/status.js';
import { API_PREFIX, apiCallerOf } from '../http/api-auth.js';
import { DEADLINE_HEADER, GRPC_TIMEOUT_HEADER, timeoutMsOf } from './deadline-headers.js';
import { httpErrorOfGrpc } from './grpc-status.js';
import { type JsonSchema, messageSchema, methodComment } from './json-schema.js';
import { binaryToJson, jsonToBinary } from './proto-json.js';

/** Where the HTTP/JSON routes live: `/api/v1/rpc/orchestrator.v1.Predict/InferPointWise`. */
export const RPC_PREFIX = `${API_PREFIX}v1/rpc/`;

/**
 * JSON text is larger than the binary message it maps to (a float's 4 bytes are up to ~15 digits,
 * bytes grow by a third in base64): a body may be this many times `maxMessageBytes`, and the binary
 * message it maps to is then held to `maxMessageBytes` by the gRPC server itself.
 */
export const JSON_BODY_FACTOR = 4;

export interface GrpcGatewayOptions {
  /** The services whose unary methods get a route. */
  services: readonly DescService[];
  /** The gRPC server's `grpc.maxMessageBytes`. */
  maxMessageBytes: number;
  /** The header pair of the gRPC servers' caller-token auth (`auth.callerIdHeader`, `auth.callerTokenHeader`). */
  idHeader: string;
  tokenHeader: string;
  /** Whether the gRPC server checks caller tokens (`auth.callerTokens` is not empty). */
  callerTokens: boolean;
  /** The OpenAPI tag of the routes (default: the service's full name). */
  tag?: string;
  /** Request headers passed on to the call as metadata, e.g. `X-Lattice-Timings` as `lattice-timings`. */
  headersToMetadata?: readonly HeaderToMetadata[];
  /** Trailers of the call answered as response headers (on success and on error alike). */
  trailersToHeaders?: readonly TrailerToHeader[];
}

export interface HeaderToMetadata {
  /** The HTTP request header, any case. */
  header: string;
  /** The metadata key it becomes (lower case, not `-bin`). */
  metadata: string;
  /** For the OpenAPI document. */
  description: string;
}

export interface TrailerToHeader {
  /** The trailer's metadata key. */
  trailer: string;
  /** The HTTP response header it becomes. */
  header: string;
  /** For the OpenAPI document's route description. */
  description: string;
}

/** The gRPC server the routes call, known once it listens. */
export interface GatewayTarget {
  /** `host:port` of the process's own gRPC server. */
  address: string;
  /** Its TLS as a client dials it (plaintext when it serves plaintext). */
  credentials: ChannelCredentials;
}

export interface GrpcGateway {
  /** Routes answer UNAVAILABLE until the gRPC server they call is given here. */
  serve(target: GatewayTarget): void;
  /** The routes' paths, e.g. for a start-up banner. */
  readonly paths: readonly string[];
}

const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  description:
    'The gRPC status as the admin API answers errors: its code name, message and the field it is about.',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, field: { type: 'string' } },
      required: ['code', 'message'],
    },
  },
};

/** The request headers every route reads, and those `options.headersToMetadata` adds. */
function headersSchema(options: GrpcGatewayOptions): JsonSchema {
  const extra: Record<string, JsonSchema> = {};
  for (const h of options.headersToMetadata ?? []) {
    extra[h.header.toLowerCase()] = { type: 'string', description: h.description };
  }
  return {
    ...HEADERS_SCHEMA,
    properties: { ...(HEADERS_SCHEMA.properties as Record<string, JsonSchema>), ...extra },
  };
}

/** The route description's paragraph on the response headers, if any. */
function trailerHeadersText(options: GrpcGatewayOptions): string {
  return (options.trailersToHeaders ?? [])
    .map((t) => `Response header ${t.header}: ${t.description}`)
    .join('\n\n');
}

const HEADERS_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    [DEADLINE_HEADER]: {
      type: 'string',
      description:
        "The call's deadline, milliseconds from now (DEADLINE_EXCEEDED, 504, past it); without it the gRPC server's default deadline applies.",
    },
    [GRPC_TIMEOUT_HEADER]: {
      type: 'string',
      description: "gRPC's own timeout header (e.g. 500m, 2S); the sooner of the two wins.",
    },
  },
};

const identity = (bytes: Buffer): Buffer => bytes;

/**
 * Registers `POST /api/v1/rpc/<service>/<method>` for every unary method of `options.services` on
 * `app`, an ops HttpServer's app (its `/api/` guard authenticates the caller first).
 */
export function registerGrpcGateway(app: FastifyInstance, options: GrpcGatewayOptions): GrpcGateway {
  let client: Client | undefined;
  app.addHook('onClose', async () => client?.close());
  const paths: string[] = [];
  const headers = headersSchema(options);
  const responseHeaders = trailerHeadersText(options);
  for (const service of options.services) {
    for (const method of service.methods) {
      if (method.methodKind !== 'unary') continue;
      const path = `${RPC_PREFIX}${service.typeName}/${method.name}`;
      paths.push(path);
      const comment = methodComment(method);
      app.post(
        path,
        {
          bodyLimit: options.maxMessageBytes * JSON_BODY_FACTOR,
          schema: {
            summary: `${service.typeName}/${method.name}`,
            description: [
              comment,
              `The gRPC method /${service.typeName}/${method.name} over HTTP: the body is a ${method.input.typeName} and the answer a ${method.output.typeName}, both in the proto3 JSON mapping; errors are the gRPC status with its HTTP status.`,
              responseHeaders,
            ]
              .filter(Boolean)
              .join('\n\n'),
            tags: [options.tag ?? service.typeName],
            headers,
            body: messageSchema(method.input),
            response: { 200: messageSchema(method.output), '4xx': ERROR_SCHEMA, '5xx': ERROR_SCHEMA },
          },
          // The schemas document; the mapping's reader and the gRPC server validate, as for gRPC.
          validatorCompiler: () => () => true,
          serializerCompiler: () => (data) => JSON.stringify(data),
        },
        async (request, reply) => {
          if (client === undefined) {
            throw new LatticeError(
              'UNAVAILABLE',
              `${service.typeName} is starting and not serving yet; try again shortly`,
            );
          }
          return call(client, method, request, reply, options);
        },
      );
    }
  }
  return {
    paths,
    serve(target) {
      client?.close();
      // The server's own limits decide what is too large: this client takes any answer it sends.
      client = new Client(target.address, target.credentials, {
        'grpc.max_receive_message_length': -1,
        'grpc.max_send_message_length': -1,
        'grpc.enable_channelz': 0,
      });
    },
  };
}

/** The caller's credentials as the gRPC server reads them. */
function callerMetadata(request: FastifyRequest, options: GrpcGatewayOptions): Metadata {
  const metadata = new Metadata();
  const caller = apiCallerOf(request);
  if (caller.kind === 'caller-token' && caller.token !== undefined) {
    metadata.set(options.idHeader.toLowerCase(), caller.name);
    metadata.set(options.tokenHeader.toLowerCase(), caller.token);
  } else if (caller.kind === 'admin-key' && options.callerTokens) {
    // An admin key names no caller the gRPC servers know: they would refuse it as unauthenticated,
    // which a console logged in with that key would read as a bad key.
    throw new LatticeError(
      'PERMISSION_DENIED',
      `${caller.name} is a vss admin API key: it opens the admin API and the console, not the gRPC services; call with a caller token of auth.callerTokens`,
      { field: 'Authorization' },
    );
  }
  return metadata;
}

async function call(
  client: Client,
  method: DescMethod,
  request: FastifyRequest,
  reply: FastifyReply,
  options: GrpcGatewayOptions,
): Promise<FastifyReply> {
  const metadata = callerMetadata(request, options);
  forwardHeaders(request, metadata, options);
  const timeoutMs = timeoutMsOf(request.headers);
  const bytes = jsonToBinary(method.input, request.body);
  const grpcPath = `/${method.parent.typeName}/${method.name}`;
  const answer = await new Promise<{ error: ServiceError | null; bytes?: Buffer; trailers?: Metadata }>(
    (resolve) => {
      // grpc-js calls back with the answer, then emits the status with the trailers: wait for both.
      const got: { error?: ServiceError | null; bytes?: Buffer; trailers?: Metadata; ended?: true } = {};
      const settle = () => {
        if (got.error !== undefined && got.ended)
          resolve({ error: got.error, bytes: got.bytes, trailers: got.trailers });
      };
      const started = client.makeUnaryRequest(
        grpcPath,
        identity,
        identity,
        Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        metadata,
        timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs },
        (error, value) => {
          got.error = error;
          got.bytes = value;
          settle();
        },
      );
      started.on('status', (status: StatusObject) => {
        got.trailers = status.metadata;
        got.ended = true;
        settle();
      });
      // The HTTP client gave up before its answer: so does the call, freeing the server's work.
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) started.cancel();
      });
    },
  );
  answerTrailers(answer.trailers ?? answer.error?.metadata, reply, options);
  if (answer.error !== null) {
    const field = answer.error.metadata?.get('field')[0];
    const { status, body } = httpErrorOfGrpc(
      answer.error.code,
      boundedText(answer.error.details ?? answer.error.message),
      typeof field === 'string' ? field : undefined,
    );
    return reply.status(status).send(body);
  }
  const json = binaryToJson(method.output, answer.bytes ?? Buffer.alloc(0));
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(json));
}

/** `options.headersToMetadata`: each header the request carries, as its metadata key. */
function forwardHeaders(request: FastifyRequest, metadata: Metadata, options: GrpcGatewayOptions): void {
  for (const { header, metadata: key } of options.headersToMetadata ?? []) {
    const value = request.headers[header.toLowerCase()];
    const text = Array.isArray(value) ? value[0] : value;
    if (text === undefined) continue;
    // Metadata values are printable ASCII (grpc-js throws on anything else).
    if (!/^[\x20-\x7e]*$/.test(text)) {
      throw new LatticeError('INVALID_ARGUMENT', `${header} must be printable ASCII`, { field: header });
    }
    metadata.set(key, text);
  }
}

/** `options.trailersToHeaders`: each trailer the call answered, as its response header. */
function answerTrailers(
  trailers: Metadata | undefined,
  reply: FastifyReply,
  options: GrpcGatewayOptions,
): void {
  if (trailers === undefined) return;
  for (const { trailer, header } of options.trailersToHeaders ?? []) {
    const value = trailers.get(trailer)[0];
    if (typeof value === 'string') reply.header(header, value);
  }
}
