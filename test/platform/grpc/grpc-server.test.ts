import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { invalidArgument, notFound } from '../../../src/platform/errors.js';
import { clampTimeoutHeader, MAX_TIMEOUT_HEADER } from '../../../src/platform/grpc/deadline-clamp.js';
import { GrpcServer, MAX_STATUS_MESSAGE } from '../../../src/platform/grpc/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { eventually } from '../../support/servers.js';

const echoProto = fileURLToPath(new URL('../../fixtures/proto/echo.proto', import.meta.url));
const reflectionProto = fileURLToPath(
  new URL(
    '../../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto',
    import.meta.url,
  ),
);
const healthProto = fileURLToPath(
  new URL('../../../node_modules/grpc-health-check/proto/health/v1/health.proto', import.meta.url),
);

type Pkg = Record<string, unknown>;
function lookup(pkg: Pkg, path: string): grpc.ServiceClientConstructor {
  return path
    .split('.')
    .reduce<unknown>((node, key) => (node as Pkg)[key], pkg) as grpc.ServiceClientConstructor;
}
const echoPkg = grpc.loadPackageDefinition(loadSync(echoProto)) as Pkg;
const EchoClient = lookup(echoPkg, 'lattice.test.Echo');
const HealthClient = lookup(
  grpc.loadPackageDefinition(loadSync(healthProto, { enums: String })) as Pkg,
  'grpc.health.v1.Health',
);
const ReflectionClient = lookup(
  grpc.loadPackageDefinition(loadSync(reflectionProto)) as Pkg,
  'grpc.reflection.v1.ServerReflection',
);

interface SayRequest {
  text: string;
  delayMs: number;
  fail: string;
}
type Unary = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;

function call<T>(
  client: grpc.Client,
  method: string,
  request: object,
  metadata = new grpc.Metadata(),
  deadlineMs = 5000,
): Promise<T> {
  const fn = (client as unknown as Record<string, Unary>)[method]!.bind(client);
  return new Promise((resolve, reject) =>
    fn(request, metadata, { deadline: Date.now() + deadlineMs }, (err, res) =>
      err ? reject(err) : resolve(res as T),
    ),
  );
}

function startEcho(
  options: { auth?: Record<string, string>; maxInFlightCalls?: number; defaultDeadlineMs?: number } = {},
) {
  const metrics = new Metrics();
  const server = new GrpcServer({
    name: 'echo',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics,
    reflectionProtos: [echoProto],
    auth: options.auth
      ? { tokens: options.auth, idHeader: 'caller-id', tokenHeader: 'caller-token' }
      : undefined,
    shutdownGraceMs: 2000,
    maxInFlightCalls: options.maxInFlightCalls,
    defaultDeadlineMs: options.defaultDeadlineMs,
  });
  /**
   * Calls with `fail: 'held'` run until the test lets them finish (`release`), ignoring their signal:
   * a slow handler whose end the test decides, instead of one that sleeps for a guessed time.
   */
  const held = { started: 0, finished: 0, release: () => {}, released: Promise.resolve() };
  const hold = () => {
    held.released = new Promise<void>((resolve) => {
      held.release = resolve;
    });
  };
  hold();
  server.addUnaryService(EchoClient.service, {
    Say: async (request: SayRequest, context) => {
      if (request.delayMs > 0) {
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, request.delayMs);
          context.signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(context.signal.reason);
          });
        });
      }
      if (request.fail === 'fanout') {
        // One listener per downstream call, as a handler with many calls in flight adds them.
        const listeners = Array.from({ length: 30 }, () => () => {});
        for (const listener of listeners) context.signal.addEventListener('abort', listener);
        for (const listener of listeners) context.signal.removeEventListener('abort', listener);
      }
      if (request.fail === 'invalid') throw invalidArgument('text must not be empty', 'text');
      if (request.fail === 'not_found') throw notFound('no such echo');
      if (request.fail === 'echo_input')
        throw invalidArgument(`unknown text "${request.text}"`, request.text);
      if (request.fail === 'crash') throw new TypeError('secret internals');
      if (request.fail === 'held') {
        held.started++;
        const released = held.released;
        await released;
        held.finished++;
        if (held.released === released) hold();
      }
      return { text: `echo ${request.text}` };
    },
  });
  return { server, metrics, held };
}

describe('GrpcServer', () => {
  const { server, metrics } = startEcho();
  let client: grpc.Client;
  let address: string;

  before(async () => {
    address = `127.0.0.1:${await server.start()}`;
    client = new EchoClient(address, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test('answers a unary call', async () => {
    const res = await call<{ text: string }>(client, 'Say', { text: 'hi' });
    assert.equal(res.text, 'echo hi');
  });

  test('maps Lattice errors to their status, with the field in trailers', async () => {
    await assert.rejects(call(client, 'Say', { fail: 'invalid' }), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(err.details, 'text must not be empty');
      assert.deepEqual(err.metadata.get('field'), ['text']);
      return true;
    });
    await assert.rejects(call(client, 'Say', { fail: 'not_found' }), { code: grpc.status.NOT_FOUND });
  });

  test('an unexpected error is INTERNAL without internals, and the server keeps serving', async () => {
    await assert.rejects(call(client, 'Say', { fail: 'crash' }), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.INTERNAL);
      assert.doesNotMatch(err.details, /secret/);
      return true;
    });
    assert.equal((await call<{ text: string }>(client, 'Say', { text: 'still' })).text, 'echo still');
  });

  test('the deadline aborts the handler and the client gets DEADLINE_EXCEEDED', async () => {
    await assert.rejects(call(client, 'Say', { text: 'slow', delayMs: 5000 }, new grpc.Metadata(), 100), {
      code: grpc.status.DEADLINE_EXCEEDED,
    });
  });

  test("a handler may add any number of listeners to the call's signal without a leak warning", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      assert.equal(
        (await call<{ text: string }>(client, 'Say', { text: 'many', fail: 'fanout' })).text,
        'echo many',
      );
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(
      warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
      [],
    );
  });

  test('serves grpc.health.v1 with SERVING for the server and each service', async () => {
    const health = new HealthClient(address, grpc.credentials.createInsecure());
    try {
      assert.deepEqual(await call(health, 'check', { service: '' }), { status: 'SERVING' });
      assert.deepEqual(await call(health, 'check', { service: 'lattice.test.Echo' }), { status: 'SERVING' });
    } finally {
      health.close();
    }
  });

  test('serves reflection listing the registered services', async () => {
    const reflection = new ReflectionClient(address, grpc.credentials.createInsecure());
    try {
      const stream = (
        reflection as unknown as {
          serverReflectionInfo(): grpc.ClientDuplexStream<
            object,
            { listServicesResponse?: { service: { name: string }[] } }
          >;
        }
      ).serverReflectionInfo();
      const response = await new Promise<{ listServicesResponse?: { service: { name: string }[] } }>(
        (resolve, reject) => {
          stream.once('data', resolve);
          stream.once('error', reject);
          stream.write({ listServices: '' });
        },
      );
      stream.end();
      const names = response.listServicesResponse?.service.map((s) => s.name) ?? [];
      assert.ok(names.includes('lattice.test.Echo'), `reflection listed ${names.join(', ')}`);
    } finally {
      reflection.close();
    }
  });

  test('counts calls by method and status on /metrics', async () => {
    const { body } = await metrics.scrape();
    assert.match(
      body,
      /grpc_server_handled_total\{server="echo",method="\/lattice.test.Echo\/Say",code="OK"\} \d+/,
    );
    assert.match(
      body,
      /grpc_server_handled_total\{server="echo",method="\/lattice.test.Echo\/Say",code="INVALID_ARGUMENT"\} 1/,
    );
  });
});

describe('GrpcServer caller auth', () => {
  const { server } = startEcho({ auth: { ranker: 's3cret' } });
  let client: grpc.Client;
  let address: string;
  before(async () => {
    address = `127.0.0.1:${await server.start()}`;
    client = new EchoClient(address, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  const metadata = (id?: string, token?: string) => {
    const md = new grpc.Metadata();
    if (id) md.set('caller-id', id);
    if (token) md.set('caller-token', token);
    return md;
  };

  test('accepts a known caller with its token', async () => {
    assert.equal(
      (await call<{ text: string }>(client, 'Say', { text: 'a' }, metadata('ranker', 's3cret'))).text,
      'echo a',
    );
  });
  test('rejects missing metadata, unknown callers and wrong tokens with UNAUTHENTICATED', async () => {
    for (const md of [
      metadata(),
      metadata('ranker'),
      metadata('other', 's3cret'),
      metadata('ranker', 'wrong'),
    ]) {
      await assert.rejects(call(client, 'Say', { text: 'a' }, md), { code: grpc.status.UNAUTHENTICATED });
    }
  });
  test('health checks need no token', async () => {
    const health = new HealthClient(address, grpc.credentials.createInsecure());
    try {
      assert.deepEqual(await call(health, 'check', { service: '' }), { status: 'SERVING' });
    } finally {
      health.close();
    }
  });
});

describe('GrpcServer graceful shutdown', () => {
  test('lets in-flight calls finish, refuses new ones', async () => {
    const { server, held } = startEcho();
    const address = `127.0.0.1:${await server.start()}`;
    const client = new EchoClient(address, grpc.credentials.createInsecure());
    try {
      await call(client, 'Say', { text: 'warm' });
      const inFlight = call<{ text: string }>(client, 'Say', { text: 'slow', fail: 'held' });
      await eventually(() => held.started === 1, 5000, 'the slow call to reach its handler');
      let stoppedYet = false;
      const stopped = server.stop().then(() => {
        stoppedYet = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(stoppedYet, false, 'the stop waits for the call in flight');
      held.release();
      assert.equal((await inFlight).text, 'echo slow');
      await stopped;
      const late = new EchoClient(address, grpc.credentials.createInsecure());
      await assert.rejects(call(late, 'Say', { text: 'late' }, new grpc.Metadata(), 1000), {
        code: grpc.status.UNAVAILABLE,
      });
      late.close();
    } finally {
      client.close();
    }
  });
});

describe('GrpcServer at the edges of the wire', () => {
  const { server } = startEcho();
  let client: grpc.Client;
  let address: string;

  before(async () => {
    address = `127.0.0.1:${await server.start()}`;
    client = new EchoClient(address, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test('a deadline of 30 days is honoured, not expired at once (grpc-js timeout overflow)', async () => {
    const day = 86_400_000;
    for (const days of [20, 30, 40, 50]) {
      const res = await call<{ text: string }>(
        client,
        'Say',
        { text: `${days}d`, delayMs: 20 },
        new grpc.Metadata(),
        days * day,
      );
      assert.equal(res.text, `echo ${days}d`);
    }
    assert.equal(clampTimeoutHeader('2592000S'), MAX_TIMEOUT_HEADER);
    assert.equal(clampTimeoutHeader('720H'), MAX_TIMEOUT_HEADER);
    assert.equal(clampTimeoutHeader('99999999m'), '99999999m');
    assert.equal(clampTimeoutHeader('100m'), '100m');
  });

  test('a status message quotes at most a short prefix of a huge input', async () => {
    const huge = `${'x'.repeat(1_000_000)}é`;
    await assert.rejects(
      call(client, 'Say', { text: huge, fail: 'echo_input' }),
      (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
        assert.ok(err.details.length <= MAX_STATUS_MESSAGE, `details ${err.details.length} chars`);
        assert.match(err.details, /^unknown text "xxx.*more characters\)$/);
        assert.ok(String(err.metadata.get('field')[0]).length <= 256);
        assert.match(String(err.metadata.get('field')[0]), /^[\x20-\x7e]+$/);
        return true;
      },
    );
    // A short field that is not ASCII still reaches the client as a status.
    await assert.rejects(
      call(client, 'Say', { text: 'naïve', fail: 'echo_input' }),
      (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
        assert.equal(err.details, 'unknown text "naïve"');
        assert.deepEqual(err.metadata.get('field'), ['na?ve']);
        return true;
      },
    );
    assert.equal((await call<{ text: string }>(client, 'Say', { text: 'after' })).text, 'echo after');
  });

  test('request bytes that do not decode are INVALID_ARGUMENT, and the server keeps serving', async () => {
    const raw = new grpc.Client(address, grpc.credentials.createInsecure());
    const send = (bytes: Buffer) =>
      new Promise<Buffer>((resolve, reject) =>
        raw.makeUnaryRequest(
          '/lattice.test.Echo/Say',
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          { deadline: Date.now() + 5000 },
          (err, res) => (err ? reject(err) : resolve(res!)),
        ),
      );
    try {
      // Truncated length, a field with a wrong wire type, an invalid varint.
      for (const bytes of [
        Buffer.from([0x12, 0x01, 0x01]),
        Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        Buffer.from([0x0f]),
      ]) {
        await assert.rejects(send(bytes), (err: grpc.ServiceError) => {
          assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.details);
          assert.match(err.details, /lattice\.test\.Echo\.Say request/);
          return true;
        });
      }
    } finally {
      raw.close();
    }
    assert.equal((await call<{ text: string }>(client, 'Say', { text: 'after' })).text, 'echo after');
  });
});

describe('GrpcServer call limits', () => {
  const { server, held } = startEcho({ maxInFlightCalls: 2, defaultDeadlineMs: 150 });
  let client: grpc.Client;

  before(async () => {
    client = new EchoClient(`127.0.0.1:${await server.start()}`, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  const noDeadline = (request: object) =>
    new Promise<unknown>((resolve, reject) =>
      (client as unknown as Record<string, Unary>).Say!.bind(client)(
        request,
        new grpc.Metadata(),
        {},
        (err, res) => (err ? reject(err) : resolve(res)),
      ),
    );

  test('a call without a deadline gets the server default and is answered at it', async () => {
    // Without the default the handler would answer after its 10 s delay, and the call succeed.
    await assert.rejects(noDeadline({ text: 'slow', delayMs: 10_000 }), {
      code: grpc.status.DEADLINE_EXCEEDED,
    });
  });

  test('the client is answered at the deadline even when the handler ignores its signal', async () => {
    const before = held.finished;
    // The handler ignores its signal and runs until released: the client is answered all the same.
    await assert.rejects(call(client, 'Say', { text: 'x', fail: 'held' }, new grpc.Metadata(), 50), {
      code: grpc.status.DEADLINE_EXCEEDED,
    });
    assert.equal(held.finished, before, 'answered before the handler finished');
    held.release();
    await eventually(() => held.finished === before + 1, 5000, 'the held handler to finish');
  });

  test('past the in-flight limit a call is refused with RESOURCE_EXHAUSTED, and served again after', async () => {
    const started = held.started;
    const slow = [1, 2].map(() =>
      call<{ text: string }>(client, 'Say', { text: 'slow', fail: 'held' }, new grpc.Metadata(), 60_000),
    );
    // The two held calls run until released, so a third one is surely refused.
    await eventually(() => held.started === started + 2, 5000, 'both calls to reach their handler');
    let refused: grpc.ServiceError | undefined;
    await eventually(async () => {
      try {
        await call(client, 'Say', { text: 'third' });
        return false;
      } catch (err) {
        refused = err as grpc.ServiceError;
        return true;
      }
    });
    assert.equal(refused?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(refused?.details ?? '', /2 calls in flight \(limit 2\)/);
    held.release();
    assert.deepEqual(
      (await Promise.all(slow)).map((r) => r.text),
      ['echo slow', 'echo slow'],
    );
    assert.equal((await call<{ text: string }>(client, 'Say', { text: 'after' })).text, 'echo after');
  });
});
