/**
 * `lattice predict` and `lattice search` against servers with caller tokens on that serve TLS only
 * (the orchestrator stack of test/support/stack.ts, the vss serving test world): the caller id and
 * token and the CA come from flags or from the settings (file or LATTICE_* variables), and a call
 * without them says what to give. `lattice settings` masks the CLI's caller token.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isLatticeError } from '../../src/platform/errors.js';
import { serveTlsByDefault } from '../../src/platform/http/index.js';
import { makeTestCertificates } from '../platform/tls/certificates.js';
import { runCaptured } from '../support/cli-capture.js';
import { type Stack, startStack } from '../support/stack.js';
import { openWorld, type World } from '../vss/serving/harness.js';

const certs = makeTestCertificates();
const serverTls = {
  cert: certs.pem(certs.serverCert),
  key: certs.pem(certs.serverKey),
  clientAuth: 'off' as const,
};
const auth = { tokens: { cli: 's3cret' }, idHeader: 'caller-id', tokenHeader: 'caller-token' };
const flags = ['--caller-id', 'cli', '--caller-token', 's3cret', '--tls-ca', certs.ca];
const dir = mkdtempSync(join(tmpdir(), 'lattice-client-auth-'));
const settingsFile = join(dir, 'settings.json');
writeFileSync(
  settingsFile,
  JSON.stringify({ auth: { callerId: 'cli', callerToken: 's3cret' }, tls: { ca: certs.ca } }),
);

describe('lattice predict and lattice search with caller tokens and TLS on', () => {
  let stack: Stack;
  let world: World;
  let predict: string[];
  let search: string[];
  before(async () => {
    stack = await startStack({ auth, tls: serverTls });
    serveTlsByDefault(serverTls);
    try {
      world = await openWorld({ server: { auth } });
    } finally {
      serveTlsByDefault(undefined);
    }
    predict = [
      'predict',
      '--address',
      stack.address,
      '--model-config',
      'catalog_ranker',
      '--context',
      'user_id=u1',
    ];
    predict.push('--target-id', 'c1', '--json');
    search = [
      'search',
      '--address',
      `127.0.0.1:${world.server.port}`,
      '--entity',
      'catalog',
      '--model',
      'clip',
    ];
    search.push('--variant', 'organic', '--id', world.fixture.ids[0]!, '--page-size', '3', '--json');
  });
  after(async () => {
    await stack?.stop();
    await world?.close();
  });

  test('the caller and the CA from flags', async () => {
    const scored = await runCaptured([...predict, ...flags]);
    assert.equal(scored.exitCode, 0, scored.err);
    const result = JSON.parse(scored.out) as { targets: { id: string; values: { final_score: unknown } }[] };
    assert.equal(typeof result.targets[0]!.values.final_score, 'number');
    const found = await runCaptured([...search, ...flags]);
    assert.equal(found.exitCode, 0, found.err);
    assert.equal((JSON.parse(found.out) as { candidates: unknown[] }).candidates.length, 3);
  });

  test('the caller and the CA from the settings file', async () => {
    const scored = await runCaptured([...predict, '--settings', settingsFile]);
    assert.equal(scored.exitCode, 0, scored.err);
    assert.match(scored.out, /final_score/);
    const found = await runCaptured([...search, '--settings', settingsFile]);
    assert.equal(found.exitCode, 0, found.err);
    // A flag wins over the file: a wrong token is refused.
    await assert.rejects(
      runCaptured([...search, '--settings', settingsFile, '--caller-token', 'guess']),
      (err) => isLatticeError(err, 'UNAUTHENTICATED') && /caller cli is not authorized/.test(err.message),
    );
  });

  test('without a token: UNAUTHENTICATED saying what to give; without TLS: not reachable', async () => {
    const tlsOnly = ['--tls-ca', certs.ca];
    for (const argv of [predict, search]) {
      await assert.rejects(
        runCaptured([...argv, ...tlsOnly]),
        (err) =>
          isLatticeError(err, 'UNAUTHENTICATED') &&
          /failed \(UNAUTHENTICATED\): missing caller-id metadata.*--caller-id and --caller-token/.test(
            err.message,
          ),
      );
      await assert.rejects(
        runCaptured([...argv, '--caller-id', 'cli', '--caller-token', 's3cret']),
        (err) => isLatticeError(err, 'UNAVAILABLE') && /not reachable at/.test(err.message),
      );
    }
    // An untrusted server certificate is refused too.
    await assert.rejects(
      runCaptured([...predict, '--caller-id', 'cli', '--caller-token', 's3cret', '--tls-ca', certs.otherCa]),
      (err) => isLatticeError(err, 'UNAVAILABLE'),
    );
  });

  test('lattice settings masks the caller token', async () => {
    const shown = await runCaptured(['settings', '--settings', settingsFile]);
    assert.equal(shown.exitCode, 0, shown.err);
    const settings = JSON.parse(shown.out.slice(0, shown.out.indexOf('\nEnvironment variables:'))) as {
      auth: { callerId: string; callerToken: string };
    };
    assert.deepEqual([settings.auth.callerId, settings.auth.callerToken], ['cli', '***']);
    assert.doesNotMatch(shown.out, /s3cret/);
  });
});
