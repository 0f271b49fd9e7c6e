/**
 * The circuit of a server in the caller's own process (a LocalChannel target, as `lattice up` wires
 * its feature store, model server and compute): its timeouts are the process's own load and never
 * open the circuit; its UNAVAILABLE answers still do.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { CallPolicy, ChannelPool } from '../../../src/orchestrator/clients/index.js';
import { LatticeError } from '../../../src/platform/errors.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { EchoClient, echoGrpcServer, say } from '../../support/echo-service.js';

describe('the circuit of a server of this process', () => {
  const closing: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const close of closing) await close();
  });

  test('timeouts never open it; UNAVAILABLE answers do', async () => {
    // `slow` answers only when its call ends; `down` answers UNAVAILABLE; anything else at once.
    const server = echoGrpcServer();
    server.addUnaryService(EchoClient.service, {
      Say: async (request: { text: string }, context) => {
        if (request.text === 'slow')
          await new Promise((_, reject) =>
            context.signal.addEventListener('abort', () => reject(context.signal.reason)),
          );
        if (request.text === 'down') throw new LatticeError('UNAVAILABLE', 'down for the test');
        return { text: `echo ${request.text}` };
      },
    });
    await server.start();
    closing.push(() => server.stop(100));
    const local = server.localChannel()!;
    const pool = new ChannelPool({ local: [local] });
    closing.push(() => pool.close());
    const policy = new CallPolicy({
      pool,
      metrics: new Metrics(),
      retry: { maxAttempts: 1 },
      breaker: { consecutiveFailures: 3, halfOpenAfterMs: 60_000 },
    });
    const target = { service: 'feature_store' as const, target: local.address, method: 'Say' };
    // Each call its own request (signal), with its own full timeout: on a remote endpoint, three
    // of these in a row open the circuit.
    const send = (text: string, timeoutMs = 10_000) =>
      policy.unary(target, say, { text }, { signal: new AbortController().signal, timeoutMs }, (r) => r.text);
    for (let i = 0; i < 6; i++) {
      await assert.rejects(send('slow', 30), (err: LatticeError) => err.code === 'DEADLINE_EXCEEDED');
    }
    assert.equal(policy.circuitState(local.address), 'closed');
    assert.equal(await send('hello'), 'echo hello');
    for (let i = 0; i < 3; i++) {
      await assert.rejects(send('down'), (err: LatticeError) => err.code === 'UNAVAILABLE');
    }
    assert.equal(policy.circuitState(local.address), 'open');
  });
});
