import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import { DataType } from '../../../src/datatypes/data-type.js';
import {
  GRPCInferenceServiceService,
  type ModelInferRequest,
  type ModelInferResponse,
  type ServerReadyRequest,
  type ServerReadyResponse,
} from '../../../src/gen/inference/grpc_service.js';
import { KServeClient } from '../../../src/orchestrator/clients/index.js';
import { eventually } from '../../support/servers.js';
import {
  type Plumbing,
  plumbing,
  rejectsWith,
  sample,
  startServer,
  type TestServer,
  unusedTarget,
  within,
} from './grpc-fixtures.js';

type Ready = (
  call: ServerUnaryCall<ServerReadyRequest, ServerReadyResponse>,
  cb: sendUnaryData<ServerReadyResponse>,
) => void;

/** A model server whose ServerReady behaviour each test sets, and whose ModelInfer never answers. */
class ScriptedServer {
  server!: TestServer;
  readyCalls = 0;
  inferCalls = 0;
  inferCancelled = 0;
  ready: Ready = (_call, cb) => cb(null, { ready: true });

  async start(): Promise<void> {
    this.server = await startServer((s) =>
      s.addService(GRPCInferenceServiceService, {
        serverReady: (
          call: ServerUnaryCall<ServerReadyRequest, ServerReadyResponse>,
          cb: sendUnaryData<ServerReadyResponse>,
        ) => {
          this.readyCalls++;
          this.ready(call, cb);
        },
        modelInfer: (call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>) => {
          this.inferCalls++;
          call.on('cancelled', () => this.inferCancelled++);
        },
      }),
    );
  }
}

const unavailable = (cb: sendUnaryData<ServerReadyResponse>) =>
  cb({ code: status.UNAVAILABLE, details: 'warming up' }, null);

const inferRequest = {
  modelName: 'm',
  modelVersion: '',
  inputs: [{ name: 'x', dataType: DataType.FP32, shape: [1, 1], data: new Uint8Array(4) }],
  outputs: ['y'],
};

describe('CallPolicy: deadlines, cancellation, retries, circuit breakers, metrics', () => {
  const model = new ScriptedServer();
  let io: Plumbing;
  let client: KServeClient;

  before(async () => {
    await model.start();
    io = plumbing({ breaker: { consecutiveFailures: 3, halfOpenAfterMs: 60_000 } });
    client = new KServeClient(io.policy);
  });
  after(async () => {
    io.close();
    await model.server.stop();
  });

  test('the deadline is honoured and the server sees the call cancelled', async () => {
    // Connect both pooled channels first, so that the call reaches the handler well within its deadline.
    for (let i = 0; i < 2; i++) await client.serverReady(model.server.target);
    const calls = model.inferCalls;
    const before = model.inferCancelled;
    const started = Date.now();
    await rejectsWith(
      client.infer(model.server.target, inferRequest, {
        signal: new AbortController().signal,
        deadline: within(500),
      }),
      'DEADLINE_EXCEEDED',
      new RegExp(`model server ${model.server.target}: ModelInfer exceeded its deadline`),
    );
    // The server never answers: only the deadline ends the call, and not before it (a lower bound
    // holds on any machine; how late a busy one ends it is not this test's business).
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 490, `failed after ${elapsed} ms`);
    assert.equal(model.inferCalls, calls + 1, 'the call reached the server');
    await eventually(() => model.inferCancelled > before, 10_000, 'the server to see the cancellation');
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_errors_total', {
        method: 'ModelInfer',
        kind: 'deadline',
      }),
      1,
    );
  });

  test("the caller's AbortSignal cancels the call on the server", async () => {
    const controller = new AbortController();
    const calls = model.inferCalls;
    const cancelled = model.inferCancelled;
    // Cancelled at once, not at the deadline: that would end the call DEADLINE_EXCEEDED.
    const pending = client.infer(model.server.target, inferRequest, {
      signal: controller.signal,
      deadline: within(60_000),
    });
    await eventually(() => model.inferCalls > calls, 10_000, 'the call to reach the server');
    controller.abort(new Error('request abandoned'));
    await rejectsWith(pending, 'CANCELLED', /ModelInfer cancelled by the caller: request abandoned/);
    await eventually(() => model.inferCancelled > cancelled, 10_000, 'the server to see the cancellation');
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_errors_total', {
        method: 'ModelInfer',
        kind: 'cancelled',
      }),
      1,
    );
    // A signal aborted before the call: nothing is sent.
    await rejectsWith(
      client.infer(model.server.target, inferRequest, {
        signal: AbortSignal.abort(),
        deadline: within(1000),
      }),
      'CANCELLED',
      /cancelled by the caller/,
    );
    assert.equal(model.inferCalls, calls + 1);
  });

  test('one UNAVAILABLE is retried and the call succeeds', async () => {
    let n = 0;
    model.ready = (_call, cb) => (++n === 1 ? unavailable(cb) : cb(null, { ready: true }));
    const calls = model.readyCalls;
    const ok = { method: 'ServerReady', outcome: 'ok' };
    const okBefore = await sample(io.metrics, 'orchestrator_external_requests_total', ok);
    assert.equal(await client.serverReady(model.server.target, { deadline: within(10_000) }), true);
    assert.equal(model.readyCalls - calls, 2);
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_retries_total', { method: 'ServerReady' }),
      1,
    );
    assert.equal(await sample(io.metrics, 'orchestrator_external_requests_total', ok), okBefore + 1);
  });

  test('other errors are not retried and keep their meaning, naming the target', async () => {
    model.ready = (_call, cb) => cb({ code: status.INVALID_ARGUMENT, details: 'bad version' }, null);
    const calls = model.readyCalls;
    await rejectsWith(
      client.serverReady(model.server.target, { deadline: within(10_000) }),
      'INVALID_ARGUMENT',
      new RegExp(
        `model server ${model.server.target}: ServerReady failed with INVALID_ARGUMENT: bad version`,
      ),
    );
    assert.equal(model.readyCalls - calls, 1);
    model.ready = (_call, cb) => cb({ code: status.UNAUTHENTICATED, details: 'who are you' }, null);
    await rejectsWith(client.serverReady(model.server.target), 'UNAUTHENTICATED', /who are you/);
    assert.equal(
      io.policy.circuitState(model.server.target),
      'closed',
      'client errors never open the circuit',
    );
  });

  test('a response that cannot be parsed is INTERNAL naming the endpoint, and never opens the circuit', async () => {
    model.ready = (_call, cb) => cb(null, { ready: true });
    const unparseable = {
      ...GRPCInferenceServiceService.serverReady,
      responseDeserialize: (): ServerReadyResponse => {
        throw new Error('truncated message');
      },
    };
    const target = { service: 'model_server', target: model.server.target, method: 'ServerReady' } as const;
    for (let i = 0; i < 4; i++) {
      await rejectsWith(
        io.policy.unary(target, unparseable, {}, { deadline: within(10_000) }, (r) => r.ready),
        'INTERNAL',
        new RegExp(
          `model server ${model.server.target}: .*ServerReady: the response cannot be parsed: truncated message`,
        ),
      );
    }
    assert.equal(io.policy.circuitState(model.server.target), 'closed');
  });

  test('a call whose deadline has passed is not sent', async () => {
    const calls = model.readyCalls;
    await rejectsWith(
      client.serverReady(model.server.target, { deadline: Date.now() - 1 }),
      'DEADLINE_EXCEEDED',
      /ServerReady not sent, the deadline had passed/,
    );
    assert.equal(model.readyCalls, calls);
  });

  test('deadline failures of calls with almost no budget never open the circuit', async () => {
    for (let i = 0; i < 4; i++) {
      await rejectsWith(
        client.infer(model.server.target, inferRequest, {
          signal: new AbortController().signal,
          deadline: within(3),
        }),
        'DEADLINE_EXCEEDED',
        /ModelInfer/,
      );
    }
    assert.equal(io.policy.circuitState(model.server.target), 'closed');
  });

  test('an unreachable target fails UNAVAILABLE, without waiting out its deadline', async () => {
    const target = await unusedTarget();
    // A call that waited for the target until its deadline would end DEADLINE_EXCEEDED instead.
    await rejectsWith(
      client.serverReady(target, { deadline: within(60_000) }),
      'UNAVAILABLE',
      new RegExp(`model server ${target}: ServerReady failed with UNAVAILABLE`),
    );
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_errors_total', { target, kind: 'unavailable' }),
      1,
    );
  });
});

describe('CallPolicy circuit breaker per endpoint', () => {
  const model = new ScriptedServer();
  const healthy = new ScriptedServer();
  let io: Plumbing;
  let client: KServeClient;

  before(async () => {
    await model.start();
    await healthy.start();
    // No retries here, so that every failed call is exactly one server call. The cool-down is long
    // enough that a busy machine does not pass it between a failure and the next call a test makes.
    io = plumbing({ retry: { maxAttempts: 1 }, breaker: { consecutiveFailures: 3, halfOpenAfterMs: 1000 } });
    client = new KServeClient(io.policy);
  });
  after(async () => {
    io.close();
    await model.server.stop();
    await healthy.server.stop();
  });

  test('opens after repeated failures: fails fast without reaching the server, other endpoints unaffected', async () => {
    model.ready = (_call, cb) => unavailable(cb);
    for (let i = 0; i < 3; i++) {
      await rejectsWith(client.serverReady(model.server.target), 'UNAVAILABLE', /warming up/);
    }
    assert.equal(model.readyCalls, 3);
    assert.equal(io.policy.circuitState(model.server.target), 'open');
    await rejectsWith(
      client.serverReady(model.server.target),
      'UNAVAILABLE',
      new RegExp(`^circuit open for ${model.server.target}`),
    );
    assert.equal(model.readyCalls, 3, 'the open circuit did not call the server');
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_errors_total', {
        target: model.server.target,
        kind: 'circuit_open',
      }),
      1,
    );
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_circuit_state', { target: model.server.target }),
      1,
    );
    assert.equal(await client.serverReady(healthy.server.target), true);
  });

  test('after the cool-down one probe goes through; a failed probe opens the circuit again', async () => {
    assert.equal(io.policy.circuitState(model.server.target), 'open');
    const calls = model.readyCalls;
    await eventually(
      async () => {
        await client.serverReady(model.server.target).catch(() => undefined);
        return model.readyCalls > calls;
      },
      10_000,
      'a half-open probe',
    );
    assert.equal(model.readyCalls, calls + 1, 'exactly one probe');
    assert.equal(io.policy.circuitState(model.server.target), 'open');
    await rejectsWith(client.serverReady(model.server.target), 'UNAVAILABLE', /^circuit open/);
    assert.equal(model.readyCalls, calls + 1);
  });

  test('while the probe is in flight other calls fail fast; a successful probe closes the circuit', async () => {
    let release: (() => void) | undefined;
    model.ready = (_call, cb) => {
      release = () => cb(null, { ready: true });
    };
    const calls = model.readyCalls;
    let probe: Promise<boolean> | undefined;
    // Calls fail fast until the cool-down is over; the first one after it is the probe, and hangs.
    await eventually(
      async () => {
        const attempt = client.serverReady(model.server.target, { deadline: within(5000) });
        const failedFast = await Promise.race([
          attempt.then(
            () => false,
            () => true,
          ),
          new Promise<boolean>((resolve) => setImmediate(() => resolve(false))),
        ]);
        if (!failedFast) probe = attempt;
        return !failedFast;
      },
      10_000,
      'the probe to start',
    );
    await eventually(() => release !== undefined, 10_000, 'the probe to reach the server');
    assert.equal(io.policy.circuitState(model.server.target), 'half-open');
    await rejectsWith(client.serverReady(model.server.target), 'UNAVAILABLE', /^circuit open/);
    release!();
    assert.equal(await probe, true);
    assert.equal(io.policy.circuitState(model.server.target), 'closed');
    model.ready = (_call, cb) => cb(null, { ready: true });
    assert.equal(await client.serverReady(model.server.target), true);
    assert.equal(model.readyCalls, calls + 2, 'closed again: calls reach the server');
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_circuit_state', { target: model.server.target }),
      0,
    );
  });
});
