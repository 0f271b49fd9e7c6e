/**
 * Settings `tls` from the environment, validated once at start-up: the combinations the schema
 * refuses, and the file problems loadTls reports (missing, unreadable, not PEM, a key that belongs
 * to another certificate), each naming the setting and its variable.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { dialTarget } from '../../../src/platform/grpc/index.js';
import { outgoingTls, tlsOf } from '../../../src/platform/http/index.js';
import { loadSettings } from '../../../src/platform/settings/index.js';
import { makeTestCertificates } from './certificates.js';

const certs = makeTestCertificates();

function settingsFrom(env: Record<string, string>) {
  return loadSettings({ env: { LATTICE_DATA_DIR: certs.dir, ...env } });
}

function rejectsTls(env: Record<string, string>, pattern: RegExp): void {
  assert.throws(
    () => tlsOf(settingsFrom(env)),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'INVALID_ARGUMENT');
      assert.match(err.message, pattern);
      return true;
    },
  );
}

describe('settings tls', () => {
  test('off by default: servers and outgoing calls are plaintext', () => {
    const settings = settingsFrom({});
    assert.equal(settings.tls.clientAuth, 'off');
    assert.equal(outgoingTls(settings.tls), false);
    assert.deepEqual(tlsOf(settings), {});
  });

  test('read from the environment: the server pair, client certificates and the outgoing trust', () => {
    const settings = settingsFrom({
      LATTICE_TLS_CERT: certs.serverCert,
      LATTICE_TLS_KEY: certs.serverKey,
      LATTICE_TLS_CLIENT_CA: certs.ca,
      LATTICE_TLS_CLIENT_AUTH: 'required',
      LATTICE_TLS_CA: certs.ca,
      LATTICE_TLS_CLIENT_CERT: certs.clientCert,
      LATTICE_TLS_CLIENT_KEY: certs.clientKey,
      LATTICE_TLS_SERVER_NAME: 'localhost',
    });
    const material = tlsOf(settings);
    assert.equal(material.server?.clientAuth, 'required');
    assert.deepEqual(material.server?.cert, certs.pem(certs.serverCert));
    assert.deepEqual(material.server?.clientCa, certs.pem(certs.ca));
    assert.deepEqual(material.client?.ca, certs.pem(certs.ca));
    assert.deepEqual(material.client?.cert, certs.pem(certs.clientCert));
    assert.equal(material.client?.serverName, 'localhost');
    assert.equal(tlsOf(settings), material, 'read once per settings');
  });

  test('outgoing: auto follows cert or ca, on and off override it', () => {
    assert.equal(outgoingTls(settingsFrom({ LATTICE_TLS_CA: certs.ca }).tls), true);
    assert.equal(
      outgoingTls(settingsFrom({ LATTICE_TLS_CERT: certs.serverCert, LATTICE_TLS_KEY: certs.serverKey }).tls),
      true,
    );
    const off = settingsFrom({
      LATTICE_TLS_CERT: certs.serverCert,
      LATTICE_TLS_KEY: certs.serverKey,
      LATTICE_TLS_OUTGOING: 'off',
    });
    assert.equal(tlsOf(off).client, undefined);
    assert.ok(tlsOf(off).server);
    assert.deepEqual(tlsOf(settingsFrom({ LATTICE_TLS_OUTGOING: 'on' })).client, {}, 'system roots');
  });

  test('the schema refuses half pairs and client auth without its CA, naming the variables', () => {
    assert.throws(() => settingsFrom({ LATTICE_TLS_CERT: certs.serverCert }), /tls\.key.*LATTICE_TLS_KEY/s);
    assert.throws(() => settingsFrom({ LATTICE_TLS_CLIENT_KEY: certs.clientKey }), /tls\.clientCert/);
    assert.throws(
      () =>
        settingsFrom({
          LATTICE_TLS_CERT: certs.serverCert,
          LATTICE_TLS_KEY: certs.serverKey,
          LATTICE_TLS_CLIENT_AUTH: 'required',
        }),
      /tls\.clientCa.*LATTICE_TLS_CLIENT_CA/s,
    );
    assert.throws(
      () => settingsFrom({ LATTICE_TLS_CLIENT_AUTH: 'optional', LATTICE_TLS_CLIENT_CA: certs.ca }),
      /tls\.clientAuth.*LATTICE_TLS_CERT/s,
    );
    assert.throws(() => settingsFrom({ LATTICE_TLS_CLIENT_AUTH: 'sometimes' }), /tls\.clientAuth/);
  });

  test('file problems are reported once, at start-up, naming the setting and its variable', () => {
    const missing = join(certs.dir, 'nope.pem');
    rejectsTls(
      { LATTICE_TLS_CERT: missing, LATTICE_TLS_KEY: certs.serverKey },
      /tls\.cert \(LATTICE_TLS_CERT\): cannot read .*nope\.pem: no such file/,
    );
    rejectsTls(
      { LATTICE_TLS_CERT: certs.serverCert, LATTICE_TLS_KEY: certs.dir },
      /tls\.key \(LATTICE_TLS_KEY\): cannot read .*: is a directory/,
    );
    const notPem = join(certs.dir, 'not-pem.txt');
    writeFileSync(notPem, 'hello');
    rejectsTls(
      { LATTICE_TLS_CERT: notPem, LATTICE_TLS_KEY: certs.serverKey },
      /tls\.cert \(LATTICE_TLS_CERT\): .*not-pem\.txt holds no PEM certificate/,
    );
    rejectsTls(
      { LATTICE_TLS_CERT: certs.serverCert, LATTICE_TLS_KEY: notPem },
      /tls\.key \(LATTICE_TLS_KEY\): .*not an unencrypted PEM private key/,
    );
    rejectsTls(
      { LATTICE_TLS_CERT: certs.serverCert, LATTICE_TLS_KEY: certs.clientKey },
      /tls\.key \(LATTICE_TLS_KEY\): the key in .*client\.key does not belong to the certificate in .*server\.pem/,
    );
    rejectsTls(
      {
        LATTICE_TLS_CLIENT_CERT: certs.clientCert,
        LATTICE_TLS_CLIENT_KEY: certs.serverKey,
        LATTICE_TLS_OUTGOING: 'on',
      },
      /tls\.clientKey \(LATTICE_TLS_CLIENT_KEY\): the key .* does not belong/,
    );
    rejectsTls({ LATTICE_TLS_CA: notPem }, /tls\.ca \(LATTICE_TLS_CA\): .*holds no PEM certificate/);
    rejectsTls(
      {
        LATTICE_TLS_CERT: certs.serverCert,
        LATTICE_TLS_KEY: certs.serverKey,
        LATTICE_TLS_CLIENT_AUTH: 'required',
        LATTICE_TLS_CLIENT_CA: missing,
      },
      /tls\.clientCa \(LATTICE_TLS_CLIENT_CA\): cannot read/,
    );
    if (process.getuid?.() !== 0) {
      const locked = join(certs.dir, 'locked');
      mkdirSync(locked, { recursive: true });
      const unreadable = join(locked, 'key.pem');
      writeFileSync(unreadable, certs.pem(certs.serverKey));
      chmodSync(unreadable, 0o000);
      rejectsTls(
        { LATTICE_TLS_CERT: certs.serverCert, LATTICE_TLS_KEY: unreadable },
        /tls\.key \(LATTICE_TLS_KEY\): cannot read .*: permission denied/,
      );
    }
  });

  test('an expired certificate is refused before anything serves it', () => {
    rejectsTls(
      { LATTICE_TLS_CERT: certs.expiredServerCert, LATTICE_TLS_KEY: certs.serverKey },
      /tls\.cert \(LATTICE_TLS_CERT\): the certificate in .*expired-server\.pem expired on Jan\s+2 00:00:00 2020 GMT/,
    );
  });

  test('dialTarget: https:// dials TLS, http:// plaintext, a bare host:port TLS only when asked', () => {
    assert.equal(dialTarget('https://localhost:50051', undefined).target, 'localhost:50051');
    assert.equal(dialTarget('https://localhost:50051', undefined).credentials._isSecure(), true);
    assert.equal(dialTarget('http://localhost:50051', undefined).credentials._isSecure(), false);
    assert.equal(dialTarget('localhost:50051', undefined).credentials._isSecure(), false);
    assert.equal(dialTarget('localhost:50051', true).credentials._isSecure(), true);
    assert.throws(() => dialTarget('http://localhost:50051', true), /plaintext \(http:\/\/\)/);
    assert.throws(
      () => dialTarget('https://localhost:50051/path', undefined),
      /expected https:\/\/host:port/,
    );
  });
});
