export {
  ADMISSION_CLASSES,
  Admission,
  type AdmissionClass,
  type AdmissionClassLimits,
  AdmissionGate,
  type AdmissionLimits,
  type Classify,
  DEFAULT_ADMISSION,
} from './admission.js';
export { GrpcServer, type GrpcServerOptions, protoRoot } from './grpc-server.js';
export { type CallerAuthOptions, callerAuthInterceptor, metricsInterceptor } from './interceptors.js';
export { type ListenOptions, listen } from './listen.js';
export { type LocalCall, type LocalCallback, LocalChannel } from './local-channel.js';
export { boundedText, grpcStatusOf, MAX_STATUS_MESSAGE, toServiceError } from './status.js';
export { dialTarget, grpcChannelCredentials, grpcServerCredentials } from './tls-credentials.js';
export {
  type CallContext,
  type CallLimits,
  classifyBySize,
  defaultCallLimits,
  InFlightGate,
  type UnaryHandler,
  type UnaryHandlers,
  unary,
} from './unary.js';
export { DeferredRequest, type SlicedDecoding } from './undecodable-request.js';
