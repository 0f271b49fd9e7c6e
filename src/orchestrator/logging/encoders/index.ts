/**
 * Log payload formats (proto, arrow, parquet) and their compression, by the enums an
 * `OrchestratorLog` records.
 */
import { LogCompression, LogFormat } from '../../../gen/orchestrator/v1/log.js';
import { invalidArgument } from '../../../platform/errors.js';
import { arrowCodec } from './arrow-codec.js';
import { parquetCodec } from './parquet-codec.js';
import type { PayloadCodec } from './payload-codec.js';
import { protoCodec } from './proto-codec.js';

export { entityColumnName, logArrowTable } from './arrow-codec.js';
export { arrowFieldOf, arrowTypeOf, buildArrowTable, type NamedLogColumn } from './arrow-columns.js';
export { compressPayload, decompressPayload, MAX_PAYLOAD_BYTES } from './compression.js';
export { arrowToParquet, parquetToArrow } from './parquet-codec.js';
export type { PayloadCodec, PayloadRow } from './payload-codec.js';

/** Format names as model configs write them (`logging.format`). */
export type LogFormatName = 'proto' | 'arrow' | 'parquet';
/** Compression names as model configs write them (`logging.compression`). */
export type LogCompressionName = 'none' | 'gzip' | 'zstd';

export const LOG_FORMATS: Readonly<Record<LogFormatName, LogFormat>> = {
  proto: LogFormat.LOG_FORMAT_PROTO,
  arrow: LogFormat.LOG_FORMAT_ARROW,
  parquet: LogFormat.LOG_FORMAT_PARQUET,
};

export const LOG_COMPRESSIONS: Readonly<Record<LogCompressionName, LogCompression>> = {
  none: LogCompression.LOG_COMPRESSION_NONE,
  gzip: LogCompression.LOG_COMPRESSION_GZIP,
  zstd: LogCompression.LOG_COMPRESSION_ZSTD,
};

/** The codec of a record's format; INVALID_ARGUMENT for UNSPECIFIED or an unknown number. */
export function payloadCodec(format: LogFormat): PayloadCodec {
  switch (format) {
    case LogFormat.LOG_FORMAT_PROTO:
      return protoCodec;
    case LogFormat.LOG_FORMAT_ARROW:
      return arrowCodec;
    case LogFormat.LOG_FORMAT_PARQUET:
      return parquetCodec;
    default:
      throw invalidArgument(
        `format ${String(format)} is not one of PROTO, ARROW, PARQUET (an UNSPECIFIED record is rejected)`,
        'format',
      );
  }
}
