import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { compress as zstdCompress, decompress as zstdDecompress, init as zstdInit } from '@bokuweb/zstd-wasm';
import { LogCompression } from '../../../gen/orchestrator/v1/log.js';
import { invalidArgument, isLatticeError } from '../../../platform/errors.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** zstd level: 3 is zstd's own default, a good speed/ratio balance for a background logger. */
const ZSTD_LEVEL = 3;
/** Largest payload a reader inflates: a bound against corrupt or hostile records. */
export const MAX_PAYLOAD_BYTES = 512 * 1024 * 1024;

let zstdReady: Promise<void> | undefined;

/**
 * Loads zstd's WebAssembly once per process. zstd-wasm must never be initialised twice: a second
 * `init()` resolves at once while it swaps in a new instance, racing any call in between. Code
 * elsewhere that needs zstd-wasm should call this rather than `init()`.
 */
export function ensureZstd(): Promise<void> {
  zstdReady ??= zstdInit().catch((err: unknown) => {
    zstdReady = undefined;
    throw err;
  });
  return zstdReady;
}

/** The encoded payload compressed as `compression` says (gzip on the libuv pool, zstd in WebAssembly). */
export async function compressPayload(compression: LogCompression, bytes: Uint8Array): Promise<Uint8Array> {
  switch (compression) {
    case LogCompression.LOG_COMPRESSION_NONE:
      return bytes;
    case LogCompression.LOG_COMPRESSION_GZIP:
      return gzipAsync(bytes);
    case LogCompression.LOG_COMPRESSION_ZSTD:
      await ensureZstd();
      return zstdCompress(bytes, ZSTD_LEVEL);
    default:
      throw invalidArgument(`unknown log compression ${String(compression)}`, 'compression');
  }
}

/** The payload as encoded; INVALID_ARGUMENT when it is not valid data of its compression or too large. */
export async function decompressPayload(
  compression: LogCompression,
  bytes: Uint8Array,
  maxBytes = MAX_PAYLOAD_BYTES,
): Promise<Uint8Array> {
  try {
    switch (compression) {
      case LogCompression.LOG_COMPRESSION_NONE:
        return bytes;
      case LogCompression.LOG_COMPRESSION_GZIP:
        return await gunzipAsync(bytes, { maxOutputLength: maxBytes });
      case LogCompression.LOG_COMPRESSION_ZSTD: {
        const size = zstdContentSize(bytes);
        if (size > maxBytes) throw new Error(`it declares ${size} bytes, more than the ${maxBytes} allowed`);
        if (size === 0) return new Uint8Array(0);
        await ensureZstd();
        return zstdDecompress(bytes);
      }
      default:
        throw invalidArgument(
          `compression ${String(compression)} is not one of NONE, GZIP, ZSTD (an UNSPECIFIED record is rejected)`,
          'compression',
        );
    }
  } catch (err) {
    if (isLatticeError(err)) throw err;
    throw invalidArgument(
      `payload does not decompress as ${LogCompression[compression]}: ${(err as Error).message}`,
      'payload',
    );
  }
}

const ZSTD_MAGIC = 0xfd2fb528;

/**
 * The content size a zstd frame header declares (RFC 8878 §3.1.1.1), read before inflating so a
 * hostile header cannot make the decoder allocate without bound. Frames without a size are refused:
 * every frame this logger writes declares one.
 */
function zstdContentSize(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 5 || view.getUint32(0, true) !== ZSTD_MAGIC) throw new Error('not a zstd frame');
  const descriptor = bytes[4]!;
  const sizeFlag = descriptor >>> 6;
  const singleSegment = (descriptor >>> 5) & 1;
  const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
  const fieldBytes = [singleSegment ? 1 : 0, 2, 4, 8][sizeFlag]!;
  const at = 5 + (singleSegment ? 0 : 1) + dictionaryBytes;
  if (fieldBytes === 0) throw new Error('the zstd frame does not declare its content size');
  if (bytes.length < at + fieldBytes) throw new Error('the zstd frame header is cut off');
  switch (fieldBytes) {
    case 1:
      return view.getUint8(at);
    case 2:
      return view.getUint16(at, true) + 256;
    case 4:
      return view.getUint32(at, true);
    default:
      return Number(view.getBigUint64(at, true));
  }
}
