/** The hand-written OrchestratorLog encoder must write exactly what the generated encoder writes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogCompression, LogFormat, OrchestratorLog } from '../../../src/gen/orchestrator/v1/log.js';
import { encodeLogRecord } from '../../../src/orchestrator/wire/log-record-codec.js';
import { seededRandom } from '../../../src/platform/random.js';

const random = seededRandom(17);
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
const texts = ['', 'u1', 'catalog_ranker', 'é→€', 'x'.repeat(300), '😀'];

function record(): OrchestratorLog {
  return {
    userId: pick(texts),
    trackingId: pick(texts),
    modelConfigId: pick(texts),
    configVersion: pick(texts),
    createdAtMs: pick([0n, 1n, 127n, 128n, 1_795_532_994_005n, BigInt(Number.MAX_SAFE_INTEGER)]),
    entityIds: Array.from({ length: pick([0, 1, 100, 600]) }, () => pick(texts)),
    schema: Array.from({ length: pick([0, 1, 15]) }, () => ({
      name: pick(texts),
      dataType: pick([0, 4, 19, 30]),
      vectorDim: pick([0, 8, 70_000]),
    })),
    format: pick([LogFormat.LOG_FORMAT_PROTO, LogFormat.LOG_FORMAT_ARROW, LogFormat.LOG_FORMAT_PARQUET]),
    compression: pick([LogCompression.LOG_COMPRESSION_NONE, LogCompression.LOG_COMPRESSION_ZSTD]),
    payload: Buffer.from(Array.from({ length: pick([0, 5, 300, 20_000]) }, () => Math.floor(random() * 256))),
    metadata: Object.fromEntries(
      Array.from({ length: pick([0, 1, 3]) }, (_, i) => [pick(['', `k${i}`, 'rows']), pick(texts)]),
    ),
  };
}

test('encodeLogRecord equals the generated encoder, byte for byte, over random records', () => {
  for (let i = 0; i < 300; i++) {
    const r = record();
    assert.deepEqual(
      Buffer.from(encodeLogRecord(r)),
      Buffer.from(OrchestratorLog.encode(r).finish()),
      `record ${i}`,
    );
  }
});

test('values the logger never writes (negative, past 2^53) take the generated encoder', () => {
  for (const createdAtMs of [-5n, 2n ** 60n]) {
    const r = { ...record(), createdAtMs };
    assert.deepEqual(Buffer.from(encodeLogRecord(r)), Buffer.from(OrchestratorLog.encode(r).finish()));
    assert.equal(OrchestratorLog.decode(encodeLogRecord(r)).createdAtMs, createdAtMs);
  }
});
