/**
 * A large RetrieveModelScore answer is written straight from the matrix to bytes
 * (encodeLegacyAnswerInSlices) instead of ComponentData objects encoded by the generated encoder:
 * the bytes must be exactly those `OrchestratorResponseProto.encode(legacyResponse(...))` writes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { OrchestratorResponseProto } from '../../../src/gen/orchestrator/v1/orchestrator.js';
import { legacyResponse, legacyTable } from '../../../src/orchestrator/api/responses.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { encodeLegacyAnswerInSlices } from '../../../src/orchestrator/wire/legacy-response-codec.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { blendOnly, testRegistry } from '../../support/orchestrator.js';

const registry = testRegistry(
  new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-legacy-bytes-')) }),
);
const engine = new InferenceEngine(registry);
const call = { signal: new AbortController().signal, deadline: Number.POSITIVE_INFINITY };

const snapshot = registry.build('blend_only', '1', blendOnly());

/** A legacy execution of blend_only: the answer's columns are the id and the FP64 score. */
async function context(ids: string[], prices: string[]) {
  const { context } = await engine.executeOn(
    snapshot,
    {
      pattern: 'legacy',
      request: {
        modelConfigId: 'blend_only',
        trackingId: 't',
        entities: [
          { entity: 'item_id', ids, features: [{ name: 'price', idsFeatureValue: prices }] },
          { entity: 'user_id', ids: ['u1'], features: [{ name: 'bonus', idsFeatureValue: ['0.25'] }] },
        ],
      },
    },
    't',
  );
  return context;
}

async function assertSameBytes(label: string, ctx: Awaited<ReturnType<typeof context>>) {
  const expected = OrchestratorResponseProto.encode(await legacyResponse(ctx, call)).finish();
  const written = await encodeLegacyAnswerInSlices(legacyTable(ctx), call);
  assert.equal(written.length, expected.length, `${label}: length`);
  assert.ok(Buffer.from(expected).equals(written), `${label}: bytes differ`);
}

test('the legacy answer written from the matrix is byte for byte the generated encoding', async () => {
  await assertSameBytes('one row', await context(['a'], ['1']));
  // Non-ASCII, 4-byte and unpaired-surrogate ids (written as U+FFFD by both), long and empty ones.
  const odd = ['', 'ünïcødé', '😀', 'a\ud800b', '\udfff', 'x'.repeat(300), 'id\u0000nul'];
  await assertSameBytes(
    'odd ids',
    await context(
      odd,
      odd.map((_, i) => String(i * 1.5)),
    ),
  );
  const many = Array.from({ length: 20_000 }, (_, i) => `catalog-${i}${i % 11 === 0 ? 'é' : ''}`);
  const prices = many.map((_, i) => String((i % 97) / 7 - 3));
  await assertSameBytes('20,000 rows', await context(many, prices));
  // Rows that used defaults are summarised in the error (its message written only when not empty).
  const failing = await context(many.slice(0, 50), prices.slice(0, 50));
  for (const row of [0, 3, 7, 8, 20, 49]) failing.matrix.addRowError(row, `fetch failed for ${row}: ü`);
  await assertSameBytes('rows with errors', failing);
  const few = await context(['a', 'b'], ['1', '2']);
  few.matrix.addRowError(1, 'only one');
  await assertSameBytes('one row with an error', few);
});
