/**
 * Sticky A/B splits through the running orchestrator: gRPC Predict and legacy answers name the
 * config that served them, and the split's weights change through the console's API like any other
 * config change (validated, live, rolled back to an earlier revision), with the per-arm numbers in
 * its stats.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RunningOrchestrator, startOrchestrator } from '../../../src/orchestrator/api/index.js';
import { OrchestratorClient } from '../../../src/orchestrator/client.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { ModelConfigs, ModelConsole } from '../../../src/orchestrator/console/index.js';
import { type ConfigStore, createConfigStore } from '../../../src/platform/config-store/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { runCaptured } from '../../support/cli-capture.js';
import { blendOnly } from '../../support/orchestrator.js';

/** `price × multiplier`: the score says which config served. */
const arm = (id: string, multiplier: number, extra: Record<string, unknown> = {}) => ({
  ...blendOnly(id, `price ${multiplier} * bonus 0 * +`),
  ...extra,
});
const MULTIPLIER: Record<string, number> = { exp: 1, exp_b: 2 };
const withSplit = (weights: [number, number]) =>
  arm('exp', 1, {
    split: {
      key: 'user_id',
      arms: [
        { model_config_id: 'exp', weight: weights[0] },
        { model_config_id: 'exp_b', weight: weights[1] },
      ],
    },
  });

const USERS = Array.from({ length: 60 }, (_, i) => `user-${i}`);
const note = (comment: string) => ({ author: 'test', comment });

describe('sticky A/B splits on the running orchestrator', () => {
  let store: ConfigStore;
  let running: RunningOrchestrator;
  let configs: ModelConfigs;
  let console_: ModelConsole;
  let client: OrchestratorClient;

  before(async () => {
    store = await createConfigStore({ kind: 'file', dir: mkdtempSync(join(tmpdir(), 'lattice-split-api-')) });
    await store.put('models/exp_b', arm('exp_b', 2));
    await store.put('models/exp', withSplit([50, 50]));
    const logger = createLogger('test', { level: 'silent' });
    running = await startOrchestrator({
      host: '127.0.0.1',
      port: 0,
      store,
      buildComponent: createComponentBuilder({}),
      logger,
      metrics: new Metrics(),
    });
    configs = new ModelConfigs({ store, registry: running.registry, logger });
    await configs.start();
    console_ = new ModelConsole({ configs, registry: running.registry, traffic: running.traffic });
    client = new OrchestratorClient(`127.0.0.1:${running.port}`);
  });
  after(async () => {
    client.close();
    await configs.stop();
    await running.stop();
    await store.close();
  });

  /** Which config served each user, by the answers' served_model_config_id (checked against the scores). */
  async function arms(): Promise<Map<string, string>> {
    const served = new Map<string, string>();
    for (const user of USERS) {
      const result = await client.pointWise({
        modelConfigId: 'exp',
        targets: [{ id: 'i1', features: { price: 10 } }],
        context: { user_id: user, bonus: 0 },
        schema: { price: 'FP32' },
      });
      assert.equal(result.targets[0]!.values.score, 10 * MULTIPLIER[result.servedModelConfigId]!, user);
      served.set(user, result.servedModelConfigId);
    }
    return served;
  }

  test('Predict and legacy answers name the serving config', async () => {
    const served = await arms();
    assert.deepEqual(new Set(served.values()), new Set(['exp', 'exp_b']));
    for (const user of USERS.slice(0, 20)) {
      const legacy = await client.retrieveModelScore({
        modelConfigId: 'exp',
        entities: [
          { entity: 'item_id', ids: ['i1'], features: { price: ['10'] } },
          { entity: 'user_id', ids: [user], features: { bonus: ['0'] } },
        ],
      });
      assert.equal(legacy.servedModelConfigId, served.get(user), user);
      assert.equal(Number(legacy.rows[0]!.score), 10 * MULTIPLIER[legacy.servedModelConfigId]!);
    }
    const plain = await client.pointWise({
      modelConfigId: 'exp_b',
      targets: [{ id: 'i1', features: { price: 1 } }],
      context: { bonus: 0 },
      schema: { price: 'FP32' },
    });
    assert.equal(plain.servedModelConfigId, 'exp_b', 'a config without a split names itself');

    const stats = console_.stats().models.find((m) => m.model_config_id === 'exp')!;
    assert.deepEqual(
      stats.arms?.map((a) => a.model_config_id),
      ['exp', 'exp_b'],
    );
    assert.ok(stats.arms!.every((a) => a.requests_per_s > 0 && a.error_rate === 0));
    assert.equal(
      console_.stats().models.find((m) => m.model_config_id === 'exp_b')!.arms,
      undefined,
      'a config without a split has no arms',
    );
  });

  test('lattice predict says which arm served, when another config did', async () => {
    const served = await arms();
    for (const arm of ['exp', 'exp_b']) {
      const user = USERS.find((u) => served.get(u) === arm)!;
      const answer = await runCaptured([
        'predict',
        ...['--address', `127.0.0.1:${running.port}`, '--model-config', 'exp'],
        ...['--context', `user_id=${user}`, '--context', 'bonus=0', '--schema', 'price=FP32'],
        ...['--target-id', 'i1:price=10'],
      ]);
      assert.equal(answer.exitCode, 0, answer.err);
      if (arm === 'exp') assert.doesNotMatch(answer.out, /served by/);
      else assert.match(answer.out, /\nserved by: exp_b \(an arm of exp's split\)$/);
    }
  });

  test('weights change live through the console API, invalid weights are refused, and a rollback restores the arms', async () => {
    const before = await arms();
    const first = (await configs.revisions('exp')).at(-1)!.revision;

    const moved = await configs.apply('exp', withSplit([0, 100]), note('all to b'));
    assert.equal(moved.state, 'live');
    assert.deepEqual(new Set((await arms()).values()), new Set(['exp_b']));

    await assert.rejects(
      configs.apply('exp', withSplit([50, 40]), note('typo')),
      (err: { code: string; problems: { path: string }[] }) =>
        err.code === 'INVALID_ARGUMENT' && err.problems.some((p) => p.path === 'split.arms'),
    );
    await assert.rejects(
      configs.apply(
        'exp',
        arm('exp', 1, { split: { key: 'user_id', arms: [{ model_config_id: 'nowhere', weight: 100 }] } }),
        note('unknown arm'),
      ),
      (err: { problems: { path: string }[] }) =>
        err.problems.some((p) => p.path === 'split.arms[0].model_config_id'),
    );
    assert.deepEqual(new Set((await arms()).values()), new Set(['exp_b']), 'the previous revision serves');

    await assert.rejects(
      configs.remove('exp_b', note('clean up')),
      (err: { code: string; message: string }) => {
        assert.equal(err.code, 'FAILED_PRECONDITION');
        assert.match(err.message, /arm of the split of "exp"/);
        return true;
      },
    );
    assert.ok(running.registry.get('exp_b'), 'an arm in use is not removed');

    const rolled = await configs.rollback('exp', first, note('back to 50/50'));
    assert.equal(rolled.state, 'live');
    assert.deepEqual(await arms(), before, 'every user is back in the arm it had');
  });
});
