/**
 * `lattice orchestrator` as its own process, against the reference servers started here: every
 * pattern scored as computed independently, live config changes under load, and the inference logs
 * it publishes decoded back to what it served.
 */
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { CATALOG_RANKER_ID, catalogRankerConfig } from '../../examples/catalog-ranker.js';
import { decodeValue } from '../../src/datatypes/codecs.js';
import { DataType } from '../../src/datatypes/data-type.js';
import { LogCompression, LogFormat } from '../../src/gen/orchestrator/v1/log.js';
import { OrchestratorClient, type PredictResult } from '../../src/orchestrator/client.js';
import { decodeLogRecord, parseLogRecord } from '../../src/orchestrator/logging/index.js';
import { type Consumer, createQueue, type Queue } from '../../src/platform/queue/index.js';
import { blendOnly } from '../support/orchestrator.js';
import {
  DUO_ID,
  duoConfig,
  duoScore,
  expectedCatalogScore,
  type OrchestratorProcess,
  startOrchestratorProcess,
  writeDuoModel,
} from '../support/orchestrator-process.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import { type ReferenceServers, startReferenceServers } from '../support/stack.js';

const f = Math.fround;
const code = (err: unknown): number | undefined => (err as Partial<ServiceError>).code;

/** JetStream carries the child's inference logs to this process; without it (off CI) those tests skip. */
const natsUrl = await realServer('nats');

describe('lattice orchestrator as its own process', () => {
  let servers: ReferenceServers;
  let proc: OrchestratorProcess;
  let client: OrchestratorClient;
  const topic = uniqueName('orchestrator_logs');

  before(async () => {
    servers = await startReferenceServers({ prepareModels: writeDuoModel });
    await servers.config.put(`models/${DUO_ID}`, duoConfig(servers.targets.modelServer));
    proc = await startOrchestratorProcess({
      configDir: servers.configDir,
      featureStoreTarget: servers.targets.featureStore,
      env: natsUrl
        ? { LATTICE_QUEUE: 'jetstream', LATTICE_NATS_SERVERS: natsUrl, LATTICE_LOG_TOPIC: topic }
        : { LATTICE_LOG_TOPIC: topic },
    });
    client = new OrchestratorClient(proc.address);
    // A fresh process's first feature store call includes connecting the channel, which can take
    // longer than the components' 50 ms deadline (the rows then carry defaults and an error): wait
    // until the ranker is served from a warm channel.
    await eventually(
      async () => {
        const { targets } = await client.pointWise({
          modelConfigId: CATALOG_RANKER_ID,
          context: { user_id: 'u1' },
          targets: [{ id: 'c1' }],
          deadlineMs: 5000,
        });
        return !/failed/.test(targets[0]!.error);
      },
      10_000,
      'the catalog ranker served without failed components',
    );
  });

  after(async () => {
    client?.close();
    const exitCode = await proc?.stop();
    await servers?.stop();
    if (natsUrl) {
      const queue = await createQueue({ kind: 'jetstream', servers: [natsUrl] });
      await queue.deleteTopic(topic).catch(() => false);
      await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
      await queue.close();
    }
    assert.equal(exitCode, 0, `lattice orchestrator exit code; its output:\n${proc?.output()}`);
  });

  test('point-wise: the catalog ranker scores match values computed from the seeded data', async () => {
    for (const userId of ['u1', 'u7', 'u13']) {
      const catalogs = servers.data.rows.catalog.slice(0, 30).map((r) => r.key[0]!);
      const { targets } = await client.pointWise({
        modelConfigId: CATALOG_RANKER_ID,
        context: { user_id: userId },
        targets: catalogs.map((id) => ({ id })),
        deadlineMs: 5000,
      });
      assert.equal(targets.length, catalogs.length);
      targets.forEach((target, i) => {
        const want = expectedCatalogScore(servers, userId, catalogs[i]!);
        assert.equal(target.id, catalogs[i]);
        assert.ok(
          Math.abs((target.values.ctr as number) - want.ctr) < 1e-5,
          `${userId}/${target.id} ctr ${target.values.ctr} vs ${want.ctr} (${target.error})`,
        );
        assert.ok(
          Math.abs((target.values.final_score as number) - want.final) < 1e-5,
          `${userId}/${target.id} final_score`,
        );
        if (want.missingUserCategory) assert.match(target.error, /user_x_category/);
        else assert.equal(target.error, '');
      });
    }
  });

  const duoTargets = [
    { id: 'a', features: { price: 1.5, quality: 2 } },
    { id: 'b', features: { price: -0.75, quality: 0.5 } },
    { id: 'c', features: { price: 3.25, quality: -1 } },
    { id: 'd', features: { price: 0, quality: 4 } },
  ];
  const schema = { price: 'FP32', quality: 'FP32', weight: 'FP32' };
  const p = (i: number) => duoScore(duoTargets[i]!.features.price, duoTargets[i]!.features.quality);

  function checkTargets(result: PredictResult): void {
    assert.deepEqual(
      result.targets.map((t) => t.id),
      duoTargets.map((t) => t.id),
    );
    result.targets.forEach((t, i) => {
      assert.ok(Math.abs((t.values.p as number) - p(i)) < 1e-6, `p of ${t.id}: ${t.values.p} vs ${p(i)}`);
      assert.equal(t.error, '');
    });
  }

  function checkGroups(rows: PredictResult['pairs'], groups: { lead: number; weight: number }[]): void {
    assert.equal(rows.length, groups.length);
    rows.forEach((row, s) => {
      const want = groups[s]!;
      const lead = p(want.lead);
      assert.ok(Math.abs((row.values.lead as number) - lead) < 1e-6, `group ${s} lead`);
      assert.ok(
        Math.abs((row.values.slate_score as number) - (f(want.weight) * 10 + (row.values.lead as number))) <
          1e-9,
        `group ${s} slate_score ${row.values.slate_score}`,
      );
      assert.ok(Math.abs((row.values.slate_score as number) - (f(want.weight) * 10 + lead)) < 1e-5);
      assert.equal(row.error, '');
    });
  }

  test('pair-wise: per-pair lead score and slate compute, per-target scores when asked', async () => {
    const pairs = [
      { first: 0, second: 2, features: { weight: 0.5 } },
      { first: 3, second: 1, features: { weight: -2 } },
      { first: 1, second: 0, features: { weight: 0.125 } },
    ];
    const result = await client.pairWise({
      modelConfigId: DUO_ID,
      targets: duoTargets,
      pairs,
      schema,
      returnTargetScores: true,
      deadlineMs: 5000,
    });
    checkTargets(result);
    checkGroups(
      result.pairs,
      pairs.map((pair) => ({ lead: pair.first, weight: pair.features.weight })),
    );
    assert.deepEqual(result.slates, []);
    const without = await client.pairWise({ modelConfigId: DUO_ID, targets: duoTargets, pairs, schema });
    assert.deepEqual(without.targets, []);
    assert.equal(without.pairs.length, pairs.length);
  });

  test('slate-wise: one row per slate (its first target leads), per-target scores when asked', async () => {
    const slates = [
      { targets: [2, 0, 1], features: { weight: 1.5 } },
      { targets: [1], features: { weight: 0 } },
      { targets: [3, 2, 1, 0], features: { weight: -0.25 } },
    ];
    const result = await client.slateWise({
      modelConfigId: DUO_ID,
      targets: duoTargets,
      slates,
      schema,
      returnTargetScores: true,
      deadlineMs: 5000,
    });
    checkTargets(result);
    checkGroups(
      result.slates,
      slates.map((slate) => ({ lead: slate.targets[0]!, weight: slate.features.weight })),
    );
    assert.deepEqual(result.pairs, []);
  });

  test('legacy RetrieveModelScore: header row then one text row per id, numbers as computed', async () => {
    const catalogs = servers.data.rows.catalog.slice(10, 35).map((r) => r.key[0]!);
    const { rows, error } = await client.retrieveModelScore({
      modelConfigId: CATALOG_RANKER_ID,
      entities: [
        { entity: 'catalog_id', ids: catalogs },
        { entity: 'user_id', ids: ['u5'] },
      ],
      deadlineMs: 5000,
    });
    // The legacy error summarises the rows scored with defaults (users without a category's clicks).
    const defaulted = catalogs.filter((c) => expectedCatalogScore(servers, 'u5', c).missingUserCategory);
    if (defaulted.length === 0) assert.equal(error, '');
    else assert.match(error, new RegExp(`^${defaulted.length} of ${catalogs.length} rows used defaults: `));
    assert.equal(rows.length, catalogs.length);
    rows.forEach((row, i) => {
      const want = expectedCatalogScore(servers, 'u5', catalogs[i]!);
      assert.equal(row.catalog_id, catalogs[i]);
      assert.match(row.ctr!, /^-?\d/, `ctr text "${row.ctr}"`);
      assert.ok(
        Math.abs(Number(row.ctr) - want.ctr) < 1e-5,
        `${catalogs[i]} ctr "${row.ctr}" vs ${want.ctr}`,
      );
      assert.ok(
        Math.abs(Number(row.final_score) - want.final) < 1e-5,
        `${catalogs[i]} final "${row.final_score}" vs ${want.final}`,
      );
    });
  });

  test('live config under load: add, change, break (old keeps serving), revert — each goes live, no failed request', async () => {
    const id = uniqueName('live');
    const v1 = blendOnly(id, 'price 2 * bonus +');
    const v2 = blendOnly(id, 'price 3 * bonus +');
    const request = {
      modelConfigId: id,
      targets: [{ id: 'a', features: { price: 1.5 } }],
      context: { bonus: 0.25 },
      deadlineMs: 5000,
    };
    const V1 = 3.25;
    const V2 = 4.75;
    let running = true;
    let firstSuccessAt = Number.POSITIVE_INFINITY;
    let total = 0;
    const failures: string[] = [];
    const seen = new Map<number, number>();
    /** Every answer with when its request started, to check what was served after each change. */
    const answers: { startedAt: number; value: number }[] = [];
    const loadClients = Array.from({ length: 6 }, () => new OrchestratorClient(proc.address));
    const loops = loadClients.map(async (c) => {
      while (running) {
        const startedAt = Date.now();
        total++;
        try {
          const { targets } = await c.pointWise(request);
          const value = targets[0]!.values.score as number;
          firstSuccessAt = Math.min(firstSuccessAt, Date.now());
          seen.set(value, (seen.get(value) ?? 0) + 1);
          answers.push({ startedAt, value });
        } catch (err) {
          if (code(err) === status.NOT_FOUND && startedAt < firstSuccessAt) continue;
          failures.push(`${code(err)}: ${(err as Error).message}`);
        }
      }
    });
    const probe = async (): Promise<number | undefined> => {
      try {
        return (await client.pointWise(request)).targets[0]!.values.score as number;
      } catch (err) {
        if (code(err) === status.NOT_FOUND) return undefined;
        throw err;
      }
    };
    // How soon a change is live (orchestrator.md: within a second) depends on the machine's load: it
    // is printed below, and the deadline only catches a change that never goes live.
    const change = async (what: string, apply: () => Promise<unknown>, want: number) => {
      const started = Date.now();
      await apply();
      await eventually(async () => (await probe()) === want, 30_000, `${what} live`);
      return Date.now() - started;
    };
    const rejected = () =>
      proc.metric('orchestrator_model_config_reloads_total', { model: id, outcome: 'rejected' });
    try {
      // Let the clients see NOT_FOUND for a moment first.
      await eventually(() => total > 20, 5000, 'load before the model exists');
      const added = await change('the new model', () => servers.config.put(`models/${id}`, v1), V1);
      const changed = await change('the change', () => servers.config.put(`models/${id}`, v2), V2);

      // An invalid document (a dependency on a component nobody defines): rejected, v2 keeps serving.
      const before = await rejected();
      const brokenAt = Date.now();
      await servers.config.put(`models/${id}`, { ...v2, component_dependency: { blend: ['nowhere'] } });
      await eventually(async () => (await rejected()) > before, 10_000, 'the invalid document rejected');
      // A document that is not even JSON, written atomically (temp file + rename) as a deploy would:
      // rejected too.
      const file = join(servers.configDir, 'models', `${id}.json`);
      writeFileSync(`${file}.tmp`, '{ "model_config_id": ');
      renameSync(`${file}.tmp`, file);
      await eventually(
        async () => (await rejected()) > before + 1,
        10_000,
        'the unparsable document rejected',
      );
      const count = answers.length;
      await eventually(() => answers.length > count + 50, 5000, 'more load after the breakage');
      assert.equal(await probe(), V2);
      const afterBreak = answers.filter((a) => a.startedAt >= brokenAt);
      assert.ok(afterBreak.length > 50);
      assert.ok(
        afterBreak.every((a) => a.value === V2),
        'the previous version keeps serving after an invalid document',
      );

      const reverted = await change('the revert', () => servers.config.put(`models/${id}`, v1), V1);
      const revertedAt = Date.now();
      await eventually(
        () => answers.filter((a) => a.startedAt > revertedAt).length > 50,
        5000,
        'load after the revert',
      );
      assert.ok(
        answers.filter((a) => a.startedAt > revertedAt).every((a) => a.value === V1),
        'only the reverted version after the revert',
      );
      console.log(
        `# live config: visible after ${added} / ${changed} / ${reverted} ms (add / change / revert); ${total} requests`,
      );
    } finally {
      running = false;
      await Promise.all(loops);
      for (const c of loadClients) c.close();
    }
    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} failed requests`);
    assert.deepEqual([...seen.keys()].sort(), [V1, V2].sort(), 'every answer is one of the two versions');
    assert.ok(total > 200, `only ${total} requests under load`);
  });

  describe('inference logs published on the queue decode back to what was served', () => {
    let queue: Queue | undefined;
    let consumer: Consumer | undefined;
    const records: Uint8Array[] = [];

    before(async () => {
      if (!natsUrl) return;
      queue = await createQueue({ kind: 'jetstream', servers: [natsUrl] });
      await queue.ensureTopic(topic);
      consumer = await queue.subscribe(topic, uniqueName('reader'), (message) => {
        records.push(message.payload);
      });
    });
    after(async () => {
      await consumer?.close();
      await queue?.close();
    });

    const formats = [
      {
        format: 'proto',
        compression: 'gzip',
        wire: [LogFormat.LOG_FORMAT_PROTO, LogCompression.LOG_COMPRESSION_GZIP],
      },
      {
        format: 'arrow',
        compression: 'zstd',
        wire: [LogFormat.LOG_FORMAT_ARROW, LogCompression.LOG_COMPRESSION_ZSTD],
      },
      {
        format: 'parquet',
        compression: 'none',
        wire: [LogFormat.LOG_FORMAT_PARQUET, LogCompression.LOG_COMPRESSION_NONE],
      },
    ] as const;

    for (const { format, compression, wire } of formats) {
      test(`${format} + ${compression}`, {
        skip: natsUrl === undefined && 'NATS is not reachable',
      }, async () => {
        if (!natsUrl) return;
        const id = `ranker_log_${format}`;
        await servers.config.put(`models/${id}`, {
          ...catalogRankerConfig(servers.targets),
          model_config_id: id,
          logging: { logging_perc: 100, log_batch_size: 7, format, compression },
        });
        const catalogs = servers.data.rows.catalog.slice(5, 20).map((r) => r.key[0]!);
        const served = new Map<string, { userId: string; result: PredictResult }>();
        const send = async (trackingId: string, userId: string) => {
          const result = await client.pointWise({
            modelConfigId: id,
            trackingId,
            context: { user_id: userId },
            targets: catalogs.map((c) => ({ id: c })),
            deadlineMs: 5000,
          });
          // Keyed by the answer's tracking id: the request's, or the one the orchestrator assigned.
          served.set(result.trackingId, { userId, result });
        };
        const prefix = uniqueName(format);
        await eventually(
          async () => {
            try {
              await send(`${prefix}-0`, 'u2');
              return true;
            } catch (err) {
              if (code(err) === status.NOT_FOUND) return false;
              throw err;
            }
          },
          10_000,
          `model ${id} live`,
        );
        // The second request has no tracking id: its records carry the one its answer names.
        await Promise.all([send(`${prefix}-1`, 'u9'), send('', 'u17')]);

        // 15 targets in batches of 7: three records per request.
        const ours = async () => {
          const decoded = [];
          const seenBatches = new Set<string>();
          for (const bytes of records) {
            const record = parseLogRecord(bytes);
            if (!served.has(record.trackingId)) continue;
            const key = `${record.trackingId}/${record.metadata.batch_index}`;
            if (seenBatches.has(key)) continue; // at-least-once delivery
            seenBatches.add(key);
            decoded.push(await decodeLogRecord(record));
          }
          return decoded;
        };
        await eventually(async () => (await ours()).length === served.size * 3, 10_000, `${format} records`);
        const logs = await ours();
        const rowsSeen = new Map<string, number>();
        let fetchedRows = 0;
        for (const log of logs) {
          const { record, schema } = log;
          assert.equal(record.modelConfigId, id);
          assert.equal(record.format, wire[0]);
          assert.equal(record.compression, wire[1]);
          assert.ok(record.configVersion !== '');
          const { userId, result } = served.get(record.trackingId)!;
          assert.equal(record.userId, userId);
          const column = (name: string) => {
            const c = schema.findIndex((s) => s.name === name);
            assert.ok(
              c >= 0,
              `${format}: logged column ${name} (have ${schema.map((s) => s.name).join(', ')})`,
            );
            return c;
          };
          const [ctr, final, price, ctr7d, category, popularity, clicks] = [
            'ctr',
            'final_score',
            'catalog:stats:price',
            'catalog:stats:ctr_7d',
            'catalog:attributes:category_id',
            'category:stats:popularity',
            'user_category:agg:clicks_30d',
          ].map(column) as [number, number, number, number, number, number, number];
          const value = (values: Uint8Array[], c: number) =>
            decodeValue(schema[c]!.dataType, values[c]!, schema[c]!.vectorDim, schema[c]!.name);
          for (const row of log.rows) {
            const target = result.targets.find((t) => t.id === row.entityId);
            assert.ok(target, `${format}: logged entity ${row.entityId} was served`);
            rowsSeen.set(
              `${record.trackingId}/${row.entityId}`,
              (rowsSeen.get(`${record.trackingId}/${row.entityId}`) ?? 0) + 1,
            );
            assert.equal(schema[ctr]!.dataType, DataType.FP32);
            assert.equal(value(row.values, ctr), target.values.ctr, `${format} ${row.entityId} ctr`);
            assert.equal(
              value(row.values, final),
              target.values.final_score,
              `${format} ${row.entityId} final`,
            );
            // Features: as fetched (the seeded data), or a default exactly where the served row names the
            // component that could not fetch it (a missing user × category row, or a slow call under load).
            const want = expectedCatalogScore(servers, userId, row.entityId);
            const fetched: [number, number, string][] = [
              [price, want.price, 'catalog_features'],
              [ctr7d, want.ctr7d, 'catalog_features'],
              [category, want.categoryId, 'catalog_features'],
              [popularity, want.popularity, 'category_features'],
              [clicks, want.clicks, 'user_x_category'],
            ];
            for (const [c, expected, component] of fetched) {
              const defaulted = row.defaultedColumns.includes(c);
              assert.equal(
                defaulted,
                target.error.includes(component),
                `${format} ${row.entityId} ${schema[c]!.name} defaulted: ${defaulted}; served error "${target.error}"`,
              );
              if (!defaulted)
                assert.equal(value(row.values, c), expected, `${format} ${row.entityId} ${schema[c]!.name}`);
            }
            if (want.missingUserCategory) assert.ok(row.defaultedColumns.includes(clicks));
            else if (!row.defaultedColumns.includes(clicks)) fetchedRows++;
          }
        }
        assert.equal(rowsSeen.size, served.size * catalogs.length, 'every served row logged');
        assert.ok(fetchedRows > 0, 'some rows logged with every feature fetched');
        assert.ok(
          [...rowsSeen.values()].every((n) => n === 1),
          'each row logged once',
        );
      });
    }
  });
});
