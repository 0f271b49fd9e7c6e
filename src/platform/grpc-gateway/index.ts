export { DEADLINE_HEADER, GRPC_TIMEOUT_HEADER, timeoutMsOf } from './deadline-headers.js';
export {
  type GatewayTarget,
  type GrpcGateway,
  type GrpcGatewayOptions,
  JSON_BODY_FACTOR,
  RPC_PREFIX,
  registerGrpcGateway,
} from './grpc-gateway.js';
export { httpErrorOfGrpc } from './grpc-status.js';
export { type JsonSchema, messageSchema, methodComment } from './json-schema.js';
export { binaryToJson, descriptorRegistry, jsonToBinary } from './proto-json.js';
