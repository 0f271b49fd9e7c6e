/**
 * Real-time attribute events end to end, through vss serving and consumers running together (as
 * `lattice vss` runs them): with result caches off, a label change moves a candidate into and out
 * of a variant's Search results within a bound (1 s, the issue's; VSS_REALTIME_BOUND_MS changes it
 * for a slow machine), waited for by polling, not measured; and during a reset (the variant reads
 * version 1 and writes version 2) the change reaches both versions: the read one at once, the
 * written one as Search shows once the variant flips to it.
 *
 * On embedded defaults in this process (the in-process queue can only be published to from inside),
 * and with `lattice vss` as its own process on JetStream + PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import {
  embeddingEventJson,
  type IngestModel,
  realtimeEventJson,
  registerIngestModel,
  seededVector,
  serveVersion,
  startVersion,
} from '../support/vss-ingest-catalog.js';
import { childVssStack, inProcessVssStack, type VssStack } from '../support/vss-stack.js';

const BOUND_MS = Number(process.env.VSS_REALTIME_BOUND_MS ?? 1000);
const DIMENSION = 8;
const COUNT = 40;
const VARIANTS = ['organic', 'live'];
const LIVE = { criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }] };

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];
const encoder = new TextEncoder();

function realtimeScenario(name: string, open: () => Promise<VssStack>, options: { skip?: boolean } = {}) {
  describe(`vss real-time end to end: ${name}`, { skip: options.skip }, () => {
    let stack: VssStack;
    let model: IngestModel;
    let timestamp = 1000;

    before(async () => {
      stack = await open();
      model = await registerIngestModel(stack.store, {
        entity: uniqueName('rt').replace(/[^a-z0-9_]/g, '_'),
        dimension: DIMENSION,
        variants: { organic: {}, live: LIVE },
        cachesOff: true,
      });
      await ingestVersion(1);
      await serveVersion(stack.store, model, VARIANTS, 1);
      // Serving sees the flip (a notification from the SQL store) and the points are indexed.
      await eventually(
        async () => (await organicTop(0).catch(() => undefined)) === 'c0',
        30_000,
        'version 1 to be served',
      );
    });
    after(async () => {
      await stack?.close();
    });

    async function ingestVersion(version: number): Promise<void> {
      const before = await stack.metric('vss_ingestion_events_total', { entity: model.entity });
      const versions = Object.fromEntries(VARIANTS.map((v) => [v, version]));
      await Promise.all(
        Array.from({ length: COUNT }, (_, i) =>
          stack.queue.publish(
            stack.consumers.embeddingsTopic,
            encoder.encode(
              embeddingEventJson(model, {
                id: `c${i}`,
                version,
                versions,
                vector: seededVector(i, DIMENSION),
              }),
            ),
            { key: `c${i}` },
          ),
        ),
      );
      await eventually(
        async () =>
          (await stack.metric('vss_ingestion_events_total', { entity: model.entity })) >= before + COUNT,
        60_000,
        `version ${version} ingested`,
      );
    }

    const search = async (variant: string, i: number, pageSize: number) => {
      const response = await stack.client.search({
        entity: model.entity,
        modelName: model.modelName,
        variant,
        queries: [{ embedding: { values: seededVector(i, DIMENSION) }, filters: [], pageToken: '' }],
        pageSize,
      });
      const result = response.results[0]!;
      assert.equal(result.error, '', result.error);
      return result.candidates.map((c) => c.id);
    };
    const liveHits = (i: number, pageSize = 5) => search('live', i, pageSize);
    const organicTop = async (i: number) => (await search('organic', i, 1))[0];

    async function setLive(ids: string[], value: 'true' | 'false'): Promise<void> {
      timestamp += 1000;
      await stack.queue.publish(
        stack.consumers.realtimeTopic,
        encoder.encode(
          realtimeEventJson(
            model,
            timestamp,
            ids.map((id) => [id, 'is_live', value] as const),
          ),
        ),
        { key: ids[0] },
      );
    }

    test('a label change moves a candidate into a variant and out again, each within the bound', async () => {
      assert.ok(!(await liveHits(7)).includes('c7'), 'c7 is not live to begin with');
      // A first change, unbounded: the consumers' first real-time batch loads what later ones reuse.
      await setLive(['c3'], 'true');
      await eventually(async () => (await liveHits(3))[0] === 'c3', 30_000, 'c3 to become live');

      await setLive(['c7'], 'true');
      await eventually(async () => (await liveHits(7))[0] === 'c7', BOUND_MS, 'c7 to enter live');
      await setLive(['c7'], 'false');
      await eventually(async () => !(await liveHits(7)).includes('c7'), BOUND_MS, 'c7 to leave live');
      assert.equal(await organicTop(7), 'c7', 'organic admits c7 throughout');
    });

    test('during a reset the change reaches the version read and the version written', async () => {
      await startVersion(stack.store, model, VARIANTS, 2);
      await ingestVersion(2);
      assert.ok(!(await liveHits(9)).includes('c9'));

      await setLive(['c9'], 'true');
      await eventually(async () => (await liveHits(9))[0] === 'c9', BOUND_MS, 'c9 to enter live (version 1)');

      await serveVersion(stack.store, model, VARIANTS, 2);
      // Now served from version 2, written before the change: c9 is there because the change reached it.
      await eventually(
        async () => {
          const variant = await stack.store.variants.get({
            entity: model.entity,
            modelName: model.modelName,
            variant: 'live',
          });
          return variant.readVersion === 2 && (await liveHits(9).catch(() => []))[0] === 'c9';
        },
        30_000,
        'version 2 to be served with c9 live',
      );
      assert.equal(
        (await liveHits(3))[0],
        'c3',
        'an earlier change is in version 2 too (from the aggregator)',
      );
      assert.ok(!(await liveHits(7)).includes('c7'));
    });
  });
}

realtimeScenario('embedded, in one process', inProcessVssStack);
realtimeScenario(
  'lattice vss on JetStream + PostgreSQL',
  () => childVssStack({ nats: natsUrl!, postgres: postgresUrl! }),
  { skip: natsUrl === undefined || postgresUrl === undefined },
);
