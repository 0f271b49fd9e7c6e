/**
 * Inference logging: sampled requests become `OrchestratorLog` records (log-records.ts), encoded as
 * proto, Arrow or Parquet and compressed (encoders/), written in the background by a bounded logger
 * (inference-logger.ts) to the queue or a file, and read back by `lattice logs decode` (decode.ts).
 */
export {
  cellToJson,
  type DecodedLog,
  type DecodedLogRow,
  decodedLogsToTable,
  decodeLogRecord,
  type JsonValue,
  type LogRowObject,
  logRowObjects,
} from './decode.js';
export {
  arrowToParquet,
  arrowTypeOf,
  LOG_COMPRESSIONS,
  LOG_FORMATS,
  type LogCompressionName,
  type LogFormatName,
  parquetToArrow,
} from './encoders/index.js';
export { FileLogSink } from './file-log-sink.js';
export {
  InferenceLogger,
  type InferenceLoggerOptions,
  type LogOutcome,
} from './inference-logger.js';
export type { LogBatch, LogColumn, LoggedRequest, LogRowKind } from './log-batch.js';
export { frameRecord, parseLogRecord, readLogFile, splitRecords, writeLogFile } from './log-file.js';
export {
  batchMetadata,
  buildLogRecords,
  encodeLogBatch,
  type LoggingConfig,
  type LogRequestInfo,
  planLogBatches,
  SLATE_TARGET_IDS,
  SLATE_TARGET_INDICES,
  sampleRequest,
  USER_ID_COLUMN,
} from './log-records.js';
export type { LogSink, LogSinkWriteOptions } from './log-sink.js';
export { DEFAULT_LOG_TOPIC, DEFAULT_LOG_TOPIC_RETENTION, QueueLogSink } from './queue-log-sink.js';
