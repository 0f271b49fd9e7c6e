/**
 * A retrieval stage against vss serving with caller tokens on (its settings `auth.callerTokens`): the
 * orchestrator sends the process's outbound identity (settings `auth.callerId` / `auth.callerToken`)
 * on Search. A vss that knows that identity answers; one whose token for it differs refuses, and the
 * retriever is named with UNAUTHENTICATED (in `errors` when optional, failing the call when required).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { catalogRecommenderConfig } from '../../examples/catalog-ranker.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import type { ModelConfigInput } from '../../src/orchestrator/config/index.js';
import { putServed, serveProducts } from '../support/retrieval-stack.js';
import { eventually } from '../support/servers.js';
import { type Stack, startStack } from '../support/stack.js';
import { inProcessVssStack, type VssStack } from '../support/vss-stack.js';

const CATALOGS = 20;
const CALLER = { callerId: 'orchestrator', callerToken: 'right-token' };

describe('retrieval against vss serving with caller tokens', () => {
  let stack: Stack;
  /** Knows the orchestrator's identity with its token. */
  let vss: VssStack;
  /** Knows the orchestrator's id with another token. */
  let otherVss: VssStack;
  let client: OrchestratorClient;

  function config(id: string, target: string, required: boolean): ModelConfigInput {
    const doc = catalogRecommenderConfig({ ...stack.targets, vss: target });
    return {
      ...doc,
      model_config_id: id,
      retrieval: {
        deadline_ms: 2000,
        retrievers: [
          {
            name: 'guarded',
            target,
            entity: 'catalog',
            model: 'products',
            variant: 'all',
            query: { candidate_id_from: 'item_id' },
            k: 5,
            attributes: [{ name: 'category', column: 'vss_category' }],
            required,
          },
        ],
      },
    } as ModelConfigInput;
  }

  const put = (doc: ModelConfigInput) => putServed(stack, doc);

  const predict = (id: string) =>
    client.pointWise({ modelConfigId: id, context: { user_id: 'u3', item_id: 'c7' }, deadlineMs: 5000 });

  before(async () => {
    stack = await startStack({ catalogs: CATALOGS, caller: CALLER });
    vss = await inProcessVssStack({ env: { LATTICE_CALLER_TOKENS: 'orchestrator:right-token' } });
    otherVss = await inProcessVssStack({ env: { LATTICE_CALLER_TOKENS: 'orchestrator:another-token' } });
    await serveProducts(vss, CATALOGS, () => 'shoes');
    client = new OrchestratorClient(stack.address);
    await put(config('guarded_right', vss.address, true));
    await put(config('guarded_wrong_optional', otherVss.address, false));
    await put(config('guarded_wrong_required', otherVss.address, true));
  });
  after(async () => {
    client?.close();
    await otherVss?.close();
    await vss?.close();
    await stack?.stop();
  });

  test('with the right credentials, the guarded vss answers and its candidates are ranked', async () => {
    // The products are served once the consumers have written them.
    await eventually(
      async () => (await predict('guarded_right').catch(() => undefined))?.targets.length === 5,
      30_000,
      'the guarded retriever to answer',
    );
    const result = await predict('guarded_right');
    assert.deepEqual(result.errors, []);
    assert.equal(result.targets.length, 5);
  });

  test('with the wrong credentials, the retriever is named with UNAUTHENTICATED', async () => {
    await assert.rejects(predict('guarded_wrong_required'), (err: Error) => {
      assert.match(err.message, /required retriever guarded failed/);
      assert.match(err.message, /UNAUTHENTICATED/);
      return true;
    });
    // Optional, it contributes nothing: no retriever answered, so the call fails, naming it too.
    await assert.rejects(predict('guarded_wrong_optional'), (err: Error) => {
      assert.match(err.message, /retriever guarded: .*UNAUTHENTICATED/);
      return true;
    });
  });
});
