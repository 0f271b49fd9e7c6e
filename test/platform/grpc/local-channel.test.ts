/**
 * A server's LocalChannel (src/platform/grpc/local-channel.ts): callers in the same process reach its
 * unary methods without the network, through the same handler wrapper, so they get what a network
 * client gets: the answer, the status of an error with its details and metadata, admission refusals,
 * cancellation reaching the handler, UNAVAILABLE while the server is starting or stopping.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { LatticeError } from '../../../src/platform/errors.js';
import { DEFAULT_ADMISSION, type GrpcServer, type LocalChannel } from '../../../src/platform/grpc/index.js';
import { EchoClient, echoGrpcServer, say } from '../../support/echo-service.js';
import { eventually } from '../../support/servers.js';

interface Running {
  server: GrpcServer;
  /** Texts whose handler began, and those whose signal aborted. */
  started: string[];
  aborted: string[];
  release(text: string): void;
}

/**
 * An echo server: `fail` throws NOT_FOUND naming field `text`; `hold…` runs until released or
 * aborted; texts starting `heavy` are heavy calls (one at a time, no queue).
 */
async function startEcho(options: { startClosed?: boolean; auth?: boolean } = {}): Promise<Running> {
  const started: string[] = [];
  const aborted: string[] = [];
  const holds = new Map<string, () => void>();
  const server = echoGrpcServer({
    startClosed: options.startClosed,
    admission: { light: DEFAULT_ADMISSION.light, heavy: { concurrency: 1, queue: 0, queueTimeoutMs: 1000 } },
    ...(options.auth
      ? { auth: { tokens: { me: 'secret' }, idHeader: 'caller-id', tokenHeader: 'caller-token' } }
      : {}),
  });
  server.addUnaryService(
    EchoClient.service,
    {
      Say: async (request: { text: string }, context) => {
        started.push(request.text);
        context.signal.addEventListener('abort', () => aborted.push(request.text));
        if (request.text === 'fail')
          throw new LatticeError('NOT_FOUND', 'nothing called fail here', { field: 'text' });
        if (request.text.includes('hold'))
          await new Promise<void>((resolve, reject) => {
            holds.set(request.text, resolve);
            context.signal.addEventListener('abort', () => reject(context.signal.reason));
          });
        return { text: `echo ${request.text}` };
      },
    },
    (_method, request) => ((request as { text: string }).text.startsWith('heavy') ? 'heavy' : 'light'),
  );
  await server.start();
  return { server, started, aborted, release: (text) => holds.get(text)?.() };
}

/** Calls Say through the channel: the answer's text, or the ServiceError. */
function call(channel: LocalChannel, text: string, deadlineMs = 30_000) {
  let cancel = () => {};
  const answer = new Promise<{ text?: string; error?: grpc.ServiceError }>((resolve) => {
    cancel = channel.call(
      say.path,
      say.requestSerialize({ text }),
      new grpc.Metadata(),
      Date.now() + deadlineMs,
      (err, bytes) => resolve(err ? { error: err } : { text: say.responseDeserialize(bytes!).text }),
    ).cancel;
  });
  return { answer, cancel: () => cancel() };
}

describe('LocalChannel: a server called from its own process', () => {
  const running: Running[] = [];
  after(async () => {
    for (const { server } of running) await server.stop(100);
  });
  const start = async (options?: Parameters<typeof startEcho>[0]) => {
    const echo = await startEcho(options);
    running.push(echo);
    return echo;
  };

  test('answers as over the network: the response, and an error with its code, details and metadata', async () => {
    const echo = await start();
    const channel = echo.server.localChannel()!;
    assert.equal(channel.address, `127.0.0.1:${echo.server.port}`);
    assert.deepEqual(await call(channel, 'hello').answer, { text: 'echo hello' });
    const { error } = await call(channel, 'fail').answer;
    assert.equal(error?.code, grpc.status.NOT_FOUND);
    assert.equal(error?.details, 'nothing called fail here');
    assert.deepEqual(error?.metadata.get('field'), ['text']);
    assert.match(error!.message, /^5 NOT_FOUND: nothing called fail here$/);
  });

  test('admission applies: a heavy call beyond the class limit is refused RESOURCE_EXHAUSTED', async () => {
    const echo = await start();
    const channel = echo.server.localChannel()!;
    const first = call(channel, 'heavy hold');
    await eventually(() => echo.started.includes('heavy hold'), 10_000, 'the heavy call to run');
    const { error } = await call(channel, 'heavy second').answer;
    assert.equal(error?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(error!.details, /echo is busy: 1 heavy calls running \(limit 1\)/);
    echo.release('heavy hold');
    assert.deepEqual(await first.answer, { text: 'echo heavy hold' });
  });

  test('cancel answers CANCELLED and aborts the handler; a passed deadline answers DEADLINE_EXCEEDED', async () => {
    const echo = await start();
    const channel = echo.server.localChannel()!;
    const held = call(channel, 'hold a');
    await eventually(() => echo.started.includes('hold a'), 10_000, 'the call to run');
    held.cancel();
    assert.equal((await held.answer).error?.code, grpc.status.CANCELLED);
    await eventually(() => echo.aborted.includes('hold a'), 10_000, 'the handler to see the cancellation');
    const late = await call(channel, 'hold b', 50).answer;
    assert.equal(late.error?.code, grpc.status.DEADLINE_EXCEEDED);
  });

  test('UNAVAILABLE while the server is starting and once it stops; none with caller-token auth', async () => {
    const echo = await start({ startClosed: true });
    const channel = echo.server.localChannel()!;
    const starting = await call(channel, 'early').answer;
    assert.equal(starting.error?.code, grpc.status.UNAVAILABLE);
    assert.match(starting.error!.details, /echo is starting/);
    echo.server.open();
    assert.deepEqual(await call(channel, 'now').answer, { text: 'echo now' });
    await echo.server.stop(100);
    const stopped = await call(channel, 'after').answer;
    assert.equal(stopped.error?.code, grpc.status.UNAVAILABLE);
    assert.deepEqual(echo.started, ['now']);
    const guarded = await start({ auth: true });
    assert.equal(guarded.server.localChannel(), undefined);
  });
});
