/**
 * The gateway's call against a real GrpcServer whose handlers report what they were given: the
 * deadline header becomes the call's deadline on the server, the caller token its metadata, and an
 * HTTP client that gives up cancels the call on the server (rather than leaving it to its deadline).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SearchResponse } from '../../../src/gen/vss/v1/vss.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import type { CallContext } from '../../../src/platform/grpc/index.js';
import { ApiAuth } from '../../../src/platform/http/index.js';
import { opsServer, searchGateway } from './gateway-harness.js';

const TOKEN = 'gateway-token';
/** The server's default deadline, far from any the tests send. */
const DEFAULT_DEADLINE_MS = 600_000;

/** What the Search handler saw of each call, and how the call ended on the server. */
const calls: { context: CallContext; ended: Promise<unknown> }[] = [];
const { search } = searchGateway(opsServer({ apiAuth: new ApiAuth({ callerTokens: { console: TOKEN } }) }), {
  search: async (request, context) => {
    if (request.entity === 'quick') return SearchResponse.fromPartial({});
    // A call that runs until the client cancels it or its deadline passes.
    const ended = new Promise((resolve) =>
      context.signal.addEventListener('abort', () => resolve(context.signal.reason), { once: true }),
    );
    calls.push({ context, ended });
    await ended;
    throw context.signal.reason;
  },
  grpc: {
    defaultDeadlineMs: DEFAULT_DEADLINE_MS,
    auth: { tokens: { console: TOKEN }, idHeader: 'caller-id', tokenHeader: 'caller-token' },
  },
  gateway: { callerTokens: true },
  headers: { authorization: `Bearer ${TOKEN}` },
});

test('the call carries the caller token as its metadata and the deadline header as its deadline', async () => {
  assert.equal((await search('quick')).status, 200);
  const sent = Date.now();
  const answer = search('slow', { 'x-lattice-deadline-ms': '1000' });
  await waitFor(() => calls.length === 1);
  const { context, ended } = calls[0]!;
  assert.equal(context.metadata.get('caller-id')[0], 'console');
  assert.equal(context.metadata.get('caller-token')[0], TOKEN);
  assert.ok(context.deadline <= Date.now() + 1000, 'the header, not the server default');
  assert.ok(context.deadline >= sent, 'a deadline from this call');
  // The client's deadline and the server's are the same instant: either side may end the call first.
  await ended;
  const response = await answer;
  assert.equal(response.status, 504);
  assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'DEADLINE_EXCEEDED');
});

// Without the cancel the call would run to the server's default deadline: the test's timeout fails it.
test('an HTTP client that gives up cancels its call on the gRPC server', { timeout: 60_000 }, async () => {
  const controller = new AbortController();
  const answer = search('slow', {}, controller.signal).catch((err: unknown) => err);
  await waitFor(() => calls.length === 2);
  controller.abort();
  const reason = await calls[1]!.ended;
  assert.ok(isLatticeError(reason, 'CANCELLED'), `the call ended by ${String(reason)}, not cancelled`);
  assert.ok((await answer) instanceof Error);
});

async function waitFor(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}
