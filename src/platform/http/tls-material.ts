/**
 * The TLS files of settings `tls`, read and checked once at start-up: a missing or unreadable file,
 * something that is not PEM, an expired certificate or a key that does not belong to its certificate
 * is an INVALID_ARGUMENT naming the setting and its variable, before any server binds. Every server
 * and client of the process then uses the same bytes (grpc/tls-credentials.ts, https-options.ts).
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describeError, invalidArgument } from '../errors.js';
import type { Settings } from '../settings/index.js';

export type ClientAuth = 'off' | 'optional' | 'required';

/** What every server of the process presents and asks of its clients. */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
  /** CA bundle client certificates must chain to; set whenever `clientAuth` is not `off`. */
  clientCa?: Buffer;
  clientAuth: ClientAuth;
}

/** What outgoing calls trust and present. */
export interface ClientTls {
  /** Trusted CA bundle; unset: the system's roots. */
  ca?: Buffer;
  /** Client certificate and its key, for servers that ask for one. */
  cert?: Buffer;
  key?: Buffer;
  /** Name checked in the server's certificate instead of the host dialled. */
  serverName?: string;
}

export interface TlsMaterial {
  /** Unset: servers speak plaintext. */
  server?: ServerTls;
  /** Unset: outgoing calls are plaintext. */
  client?: ClientTls;
}

export type TlsSettings = Settings['tls'];

const ENV: Record<string, string> = {
  cert: 'LATTICE_TLS_CERT',
  key: 'LATTICE_TLS_KEY',
  clientCa: 'LATTICE_TLS_CLIENT_CA',
  ca: 'LATTICE_TLS_CA',
  clientCert: 'LATTICE_TLS_CLIENT_CERT',
  clientKey: 'LATTICE_TLS_CLIENT_KEY',
};

function problem(setting: string, message: string) {
  return invalidArgument(`tls.${setting} (${ENV[setting]}): ${message}`, `tls.${setting}`);
}

function readPem(setting: string, file: string): Buffer {
  const path = resolve(file);
  try {
    return readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'is a directory'
            : describeError(err);
    throw problem(setting, `cannot read ${path}: ${why}`);
  }
}

/** Every certificate of a PEM bundle, parsed (X509Certificate alone reads only the first). */
function certificates(setting: string, file: string, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (blocks === null) throw problem(setting, `${resolve(file)} holds no PEM certificate`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw problem(
        setting,
        `certificate ${i + 1} of ${resolve(file)} cannot be parsed: ${describeError(err)}`,
      );
    }
  });
}

function privateKey(setting: string, file: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw problem(setting, `${resolve(file)} is not an unencrypted PEM private key: ${describeError(err)}`);
  }
}

/** The leaf certificate, in date, and the key that belongs to it. */
function checkPair(certSetting: string, keySetting: string, certFile: string, keyFile: string) {
  const cert = readPem(certSetting, certFile);
  const key = readPem(keySetting, keyFile);
  const [leaf] = certificates(certSetting, certFile, cert);
  const now = Date.now();
  if (Date.parse(leaf!.validTo) < now) {
    throw problem(certSetting, `the certificate in ${resolve(certFile)} expired on ${leaf!.validTo}`);
  }
  if (Date.parse(leaf!.validFrom) > now) {
    throw problem(
      certSetting,
      `the certificate in ${resolve(certFile)} is not valid before ${leaf!.validFrom}`,
    );
  }
  if (!leaf!.checkPrivateKey(privateKey(keySetting, keyFile, key))) {
    throw problem(
      keySetting,
      `the key in ${resolve(keyFile)} does not belong to the certificate in ${resolve(certFile)} (tls.${certSetting})`,
    );
  }
  return { cert, key };
}

function bundle(setting: string, file: string): Buffer {
  const pem = readPem(setting, file);
  certificates(setting, file, pem);
  return pem;
}

/** Whether outgoing calls use TLS under these settings. */
export function outgoingTls(tls: TlsSettings): boolean {
  if (tls.outgoing === 'auto') return tls.cert !== undefined || tls.ca !== undefined;
  return tls.outgoing === 'on';
}

/** Reads and checks the files of settings `tls`; throws INVALID_ARGUMENT naming the setting on any problem. */
export function loadTls(tls: TlsSettings): TlsMaterial {
  const material: TlsMaterial = {};
  if (tls.cert !== undefined && tls.key !== undefined) {
    material.server = {
      ...checkPair('cert', 'key', tls.cert, tls.key),
      clientAuth: tls.clientAuth,
      ...(tls.clientAuth !== 'off' && tls.clientCa !== undefined
        ? { clientCa: bundle('clientCa', tls.clientCa) }
        : {}),
    };
  }
  if (outgoingTls(tls)) {
    const client: ClientTls = {};
    if (tls.ca !== undefined) client.ca = bundle('ca', tls.ca);
    if (tls.clientCert !== undefined && tls.clientKey !== undefined) {
      Object.assign(client, checkPair('clientCert', 'clientKey', tls.clientCert, tls.clientKey));
    }
    if (tls.serverName !== undefined) client.serverName = tls.serverName;
    material.client = client;
  }
  return material;
}

const loaded = new WeakMap<object, TlsMaterial>();

/**
 * The TLS material of validated settings, read once per settings object: every part of a process
 * that asks gets the same bytes, and a problem is reported by whichever part asks first (at start-up).
 */
export function tlsOf(settings: Pick<Settings, 'tls'>): TlsMaterial {
  let material = loaded.get(settings.tls);
  if (material === undefined) {
    material = loadTls(settings.tls);
    loaded.set(settings.tls, material);
  }
  return material;
}
