/**
 * Which failures count against an endpoint's circuit (issue 13, item 5): a caller's own oversized or
 * late request must not open the circuit for everyone, while a failing endpoint still opens it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import { DataType } from '../../../src/datatypes/data-type.js';
import {
  GRPCInferenceServiceService,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../../src/gen/inference/grpc_service.js';
import { KServeClient } from '../../../src/orchestrator/clients/index.js';
import { eventually } from '../../support/servers.js';
import {
  type Plumbing,
  plumbing,
  rejectsWith,
  startServer,
  type TestServer,
  within,
} from './grpc-fixtures.js';
import { rawResponse } from './kserve-fixture.js';

/** Model `slow` never answers, `down` answers UNAVAILABLE, any other answers at once. */
async function startModelServer(): Promise<TestServer & { calls: Map<string, number> }> {
  const calls = new Map<string, number>();
  const server = await startServer((s) =>
    s.addService(GRPCInferenceServiceService, {
      modelInfer: (
        call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>,
        cb: sendUnaryData<ModelInferResponse>,
      ) => {
        const model = call.request.modelName;
        calls.set(model, (calls.get(model) ?? 0) + 1);
        if (model === 'slow') return; // the client's deadline ends it
        if (model === 'down') return cb({ code: status.UNAVAILABLE, details: 'overloaded' }, null);
        cb(
          null,
          rawResponse(call.request, [
            { name: 'y', datatype: 'FP32', shape: [1, 1], data: new Uint8Array(4) },
          ]),
        );
      },
    }),
  );
  return Object.assign(server, { calls });
}

const request = (model: string) => ({
  modelName: model,
  modelVersion: '',
  inputs: [{ name: 'x', dataType: DataType.FP32, shape: [1, 1], data: new Uint8Array(4) }],
  outputs: ['y'],
});

describe('what counts against an endpoint circuit', () => {
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let io: Plumbing;
  let client: KServeClient;

  before(async () => {
    server = await startModelServer();
  });
  after(async () => {
    await server.stop();
  });
  // Fresh breakers for every test: 3 counted failures in a row open a circuit; no retries.
  const fresh = (halfOpenAfterMs = 60_000) => {
    io?.close();
    io = plumbing({
      retry: { maxAttempts: 1 },
      breaker: { consecutiveFailures: 3, halfOpenAfterMs },
    });
    client = new KServeClient(io.policy);
  };
  after(() => io?.close());

  test("one caller's many batches timing out count once: the circuit stays closed for a small concurrent call", async () => {
    fresh();
    const oversized = new AbortController().signal; // one request: all its batches share its signal
    const batches = Array.from({ length: 12 }, () =>
      client.infer(server.target, request('slow'), {
        signal: oversized,
        deadline: within(30_000),
        timeoutMs: 200,
      }),
    );
    // Another caller's small request, made while the oversized one's batches time out.
    const small = client.infer(server.target, request('fast'), {
      signal: new AbortController().signal,
      deadline: within(30_000),
      timeoutMs: 5_000,
    });
    await Promise.all(
      batches.map((batch) => rejectsWith(batch, 'DEADLINE_EXCEEDED', /ModelInfer exceeded its deadline/)),
    );
    assert.equal((await small).length, 1);
    assert.equal(io.policy.circuitState(server.target), 'closed');
    // And after them: still served.
    const later = await client.infer(server.target, request('fast'), {
      signal: new AbortController().signal,
      deadline: within(30_000),
    });
    assert.equal(later.length, 1);
  });

  test("timeouts cut short by the caller's own deadline never count", async () => {
    fresh();
    for (let i = 0; i < 4; i++) {
      await rejectsWith(
        client.infer(server.target, request('slow'), {
          signal: new AbortController().signal,
          deadline: within(150), // the request's deadline, well before the call's own timeout
          timeoutMs: 10_000,
        }),
        'DEADLINE_EXCEEDED',
        /ModelInfer/,
      );
    }
    assert.equal(io.policy.circuitState(server.target), 'closed');
  });

  test('small calls of different callers timing out on their own timeout open the circuit', async () => {
    fresh();
    for (let i = 0; i < 3; i++) {
      await rejectsWith(
        client.infer(server.target, request('slow'), {
          signal: new AbortController().signal,
          deadline: within(30_000),
          timeoutMs: 150,
        }),
        'DEADLINE_EXCEEDED',
        /ModelInfer exceeded its deadline/,
      );
    }
    assert.equal(io.policy.circuitState(server.target), 'open');
    const sent = server.calls.get('fast') ?? 0;
    await rejectsWith(
      client.infer(server.target, request('fast'), {
        signal: new AbortController().signal,
        deadline: within(5_000),
      }),
      'UNAVAILABLE',
      /^circuit open/,
    );
    assert.equal(server.calls.get('fast') ?? 0, sent, 'the open circuit failed fast');
  });

  test("a half-open probe that times out re-opens the circuit, even when its request's timeout counted before", async () => {
    fresh(300);
    const request1 = new AbortController().signal;
    const slow = (signal: AbortSignal) =>
      rejectsWith(
        client.infer(server.target, request('slow'), { signal, deadline: within(30_000), timeoutMs: 150 }),
        'DEADLINE_EXCEEDED',
        /ModelInfer exceeded its deadline/,
      );
    await slow(request1);
    await slow(new AbortController().signal);
    await slow(new AbortController().signal);
    assert.equal(io.policy.circuitState(server.target), 'open');
    // After the cool-down, request1's next call is the probe; it times out: the endpoint is still slow.
    await eventually(
      async () => {
        const before = server.calls.get('slow') ?? 0;
        await client
          .infer(server.target, request('slow'), {
            signal: request1,
            deadline: within(30_000),
            timeoutMs: 150,
          })
          .catch(() => undefined);
        return (server.calls.get('slow') ?? 0) > before;
      },
      5_000,
      'the half-open probe',
    );
    assert.equal(io.policy.circuitState(server.target), 'open');
  });

  test('UNAVAILABLE counts every time, even within one request', async () => {
    fresh();
    const one = new AbortController().signal;
    for (let i = 0; i < 3; i++) {
      await rejectsWith(
        client.infer(server.target, request('down'), {
          signal: one,
          deadline: within(5_000),
          timeoutMs: 1_000,
        }),
        'UNAVAILABLE',
        /overloaded/,
      );
    }
    assert.equal(io.policy.circuitState(server.target), 'open');
  });
});
