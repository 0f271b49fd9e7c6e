/**
 * Admission control of every gRPC server (src/platform/grpc/admission.ts): per class, a bounded
 * concurrency and a bounded queue with its own deadline; beyond them RESOURCE_EXHAUSTED, at once.
 * Handlers here hold until the test lets them go, so what is running and what is queued is known
 * exactly; no timings are asserted.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { classifyPredict } from '../../../src/orchestrator/api/admission-class.js';
import {
  AdmissionGate,
  type AdmissionLimits,
  DEFAULT_ADMISSION,
  DeferredRequest,
} from '../../../src/platform/grpc/index.js';
import { loadSettings } from '../../../src/platform/settings/index.js';
import { classifySimilaritySearch } from '../../../src/vss/serving/admission-class.js';
import { EchoClient, echoGrpcServer, type SayRequest } from '../../support/echo-service.js';
import { eventually } from '../../support/servers.js';

type SayCall = (
  request: SayRequest,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response?: { text: string }) => void,
) => void;

/**
 * An echo server whose calls with text `heavy…` are heavy, and where a call with text `hold:<name>`
 * runs until `release(name)`. `started` lists the texts whose handlers have begun.
 */
async function startHolding(admission: AdmissionLimits) {
  const started: string[] = [];
  const holds = new Map<string, () => void>();
  const server = echoGrpcServer({ admission });
  server.addUnaryService(
    EchoClient.service,
    {
      Say: async (request: SayRequest, context) => {
        started.push(request.text);
        const hold = /hold:(\S+)/.exec(request.text)?.[1];
        if (hold) {
          await new Promise<void>((resolve, reject) => {
            holds.set(hold, resolve);
            context.signal.addEventListener('abort', () => reject(context.signal.reason));
          });
        }
        return { text: `echo ${request.text}` };
      },
    },
    (_method, request) => ((request as SayRequest).text.startsWith('heavy') ? 'heavy' : 'light'),
  );
  const client = new EchoClient(`127.0.0.1:${await server.start()}`, grpc.credentials.createInsecure());
  const say = (text: string, deadlineMs = 30_000) =>
    new Promise<string>((resolve, reject) =>
      (client as unknown as { Say: SayCall }).Say(
        { text },
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (err, res) => (err ? reject(err) : resolve(res!.text)),
      ),
    );
  const release = async (name: string) => {
    await eventually(() => holds.has(name), 10_000, `call ${name} to be running`);
    holds.get(name)!();
    holds.delete(name);
  };
  const close = async () => {
    for (const resolve of holds.values()) resolve();
    client.close();
    await server.stop();
  };
  return { say, release, started, close };
}

const limits = (heavy: Partial<AdmissionLimits['heavy']>, light: Partial<AdmissionLimits['light']> = {}) => ({
  light: { ...DEFAULT_ADMISSION.light, ...light },
  heavy: { ...DEFAULT_ADMISSION.heavy, ...heavy },
});

/** The error a call failed with, or a failure when it succeeded. */
async function refusal(call: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await call;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  assert.fail('the call was answered OK');
}

describe('gRPC admission control', () => {
  const servers: { close(): Promise<void> }[] = [];
  after(async () => {
    for (const server of servers) await server.close();
  });

  test('a call beyond concurrency + queue is refused RESOURCE_EXHAUSTED while the others still run', async () => {
    const echo = await startHolding(limits({ concurrency: 1, queue: 1, queueTimeoutMs: 60_000 }));
    servers.push(echo);
    const running = echo.say('heavy hold:a');
    await eventually(() => echo.started.includes('heavy hold:a'), 10_000, 'the first call to run');
    const queued = echo.say('heavy b');
    const refused = await refusal(echo.say('heavy c'));
    assert.equal(refused.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(
      refused.details,
      /\/lattice\.test\.Echo\/Say: echo is busy: 1 heavy calls running \(limit 1\) and 1 queued \(limit 1\); retry with backoff \(settings grpc\.admission\.heavy\)/,
    );
    // Refused before the running call ended, with a queue deadline and a client deadline far away:
    // the refusal did not wait for either.
    assert.deepEqual(echo.started, ['heavy hold:a']);
    await echo.release('a');
    assert.equal(await running, 'echo heavy hold:a');
    // The queued call got the freed slot.
    assert.equal(await queued, 'echo heavy b');
    assert.deepEqual(echo.started, ['heavy hold:a', 'heavy b']);
  });

  test('a queued call still waiting at the queue deadline is refused RESOURCE_EXHAUSTED and never runs', async () => {
    const echo = await startHolding(limits({ concurrency: 1, queue: 4, queueTimeoutMs: 50 }));
    servers.push(echo);
    const running = echo.say('heavy hold:a');
    await eventually(() => echo.started.includes('heavy hold:a'), 10_000, 'the first call to run');
    const refused = await refusal(echo.say('heavy b', 30_000));
    assert.equal(refused.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(refused.details, /no heavy slot freed within the 50 ms queue deadline \(1 running\)/);
    await echo.release('a');
    assert.equal(await running, 'echo heavy hold:a');
    assert.deepEqual(echo.started, ['heavy hold:a']);
    // The slot is free again.
    assert.equal(await echo.say('heavy c'), 'echo heavy c');
  });

  test('a queued call whose client gives up leaves the queue; the next one gets the slot', async () => {
    const gate = new AdmissionGate('echo', 'heavy', { concurrency: 1, queue: 1, queueTimeoutMs: 60_000 });
    const first = gate.admit('/m', new AbortController().signal);
    assert.equal(typeof first, 'function', 'a free slot is taken at once');
    const leaving = new AbortController();
    const gaveUp = gate.admit('/m', leaving.signal);
    assert.equal(gate.waiting, 1);
    leaving.abort(new Error('the client went away'));
    await assert.rejects(gaveUp as Promise<unknown>, /the client went away/);
    assert.equal(gate.waiting, 0);
    const next = gate.admit('/m', new AbortController().signal);
    assert.equal(gate.waiting, 1, 'queued, not refused: the place was freed');
    (first as () => void)();
    const release = await next;
    assert.equal(gate.active, 1);
    release();
    release(); // a second call of the same release frees nothing more
    assert.equal(gate.active, 0);
  });

  test('the classes are isolated: a full heavy class never delays light calls, nor the reverse', async () => {
    const echo = await startHolding(
      limits({ concurrency: 1, queue: 0, queueTimeoutMs: 60_000 }, { concurrency: 1, queue: 0 }),
    );
    servers.push(echo);
    const heavy = echo.say('heavy hold:h');
    await eventually(() => echo.started.includes('heavy hold:h'), 10_000, 'the heavy call to run');
    assert.equal((await refusal(echo.say('heavy more'))).code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(await echo.say('light 1'), 'echo light 1');

    const light = echo.say('light hold:l');
    await eventually(() => echo.started.includes('light hold:l'), 10_000, 'the light call to run');
    const refused = await refusal(echo.say('light more'));
    assert.equal(refused.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(refused.details, /1 light calls running \(limit 1\)/);
    await echo.release('h');
    assert.equal(await heavy, 'echo heavy hold:h');
    assert.equal(await echo.say('heavy 2'), 'echo heavy 2');
    await echo.release('l');
    assert.equal(await light, 'echo light hold:l');
  });

  test('services tell heavy calls from light ones by the work they ask for', () => {
    const search = (queries: number, pageSize: number) => ({
      queries: Array.from({ length: queries }, () => ({ candidateId: 'p1' })),
      pageSize,
    });
    const path = '/vss.v1.SimilaritySearch/Search';
    assert.equal(classifySimilaritySearch(path, search(1, 10)), 'light');
    assert.equal(classifySimilaritySearch(path, search(1, 100)), 'light');
    assert.equal(classifySimilaritySearch(path, search(4, 100)), 'heavy');
    assert.equal(classifySimilaritySearch(path, search(64, 0)), 'heavy');
    const lookup = (n: number) => ({ candidateIds: Array.from({ length: n }, (_, i) => `p${i}`) });
    assert.equal(classifySimilaritySearch('/vss.v1.SimilaritySearch/GetEmbeddings', lookup(10)), 'light');
    assert.equal(classifySimilaritySearch('/vss.v1.SimilaritySearch/GetEmbeddings', lookup(5000)), 'heavy');

    const predict = '/orchestrator.v1.Predict/InferPointWise';
    assert.equal(classifyPredict(predict, { targets: [{ id: 'c1' }, { id: 'c2' }] }), 'light');
    assert.equal(classifyPredict(predict, { targets: Array.from({ length: 5000 }, () => ({})) }), 'heavy');
    const sliced = new DeferredRequest(Buffer.alloc(0), {} as never, {} as never);
    assert.equal(classifyPredict(predict, sliced), 'heavy');
  });

  test('settings: defaults, the variables that set them, and their validation', () => {
    const defaults = loadSettings({ env: {} });
    assert.deepEqual(defaults.grpc.admission, DEFAULT_ADMISSION);
    const set = loadSettings({
      env: {
        LATTICE_GRPC_ADMISSION_HEAVY_CONCURRENCY: '3',
        LATTICE_GRPC_ADMISSION_HEAVY_QUEUE: '0',
        LATTICE_GRPC_ADMISSION_HEAVY_QUEUE_TIMEOUT_MS: '100',
        LATTICE_GRPC_ADMISSION_LIGHT_CONCURRENCY: '32',
        LATTICE_GRPC_ADMISSION_LIGHT_QUEUE: '64',
        LATTICE_GRPC_ADMISSION_LIGHT_QUEUE_TIMEOUT_MS: '500',
      },
    });
    assert.deepEqual(set.grpc.admission, {
      heavy: { concurrency: 3, queue: 0, queueTimeoutMs: 100 },
      light: { concurrency: 32, queue: 64, queueTimeoutMs: 500 },
    });
    const errorOf = (env: Record<string, string>) => {
      try {
        loadSettings({ env });
      } catch (err) {
        return String((err as Error).message);
      }
      assert.fail(`accepted ${JSON.stringify(env)}`);
    };
    assert.match(
      errorOf({ LATTICE_GRPC_ADMISSION_HEAVY_CONCURRENCY: '0' }),
      /grpc\.admission\.heavy\.concurrency \(from env LATTICE_GRPC_ADMISSION_HEAVY_CONCURRENCY\)/,
    );
    assert.match(
      errorOf({ LATTICE_GRPC_ADMISSION_LIGHT_QUEUE: '-1' }),
      /grpc\.admission\.light\.queue \(from env LATTICE_GRPC_ADMISSION_LIGHT_QUEUE\)/,
    );
    assert.match(
      errorOf({ LATTICE_GRPC_ADMISSION_HEAVY_QUEUE_TIMEOUT_MS: '60000' }),
      /grpc\.admission\.heavy\.queueTimeoutMs \(from env LATTICE_GRPC_ADMISSION_HEAVY_QUEUE_TIMEOUT_MS\).*a queue deadline is meant to be short/,
    );
  });
});
