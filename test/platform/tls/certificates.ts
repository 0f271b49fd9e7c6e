/**
 * Test certificates made with openssl in a temporary directory: a CA, a server certificate it signed
 * (for `localhost` and 127.0.0.1), a client certificate it signed, and a second, unrelated CA with a
 * server certificate of its own (the "wrong CA"). Each is a PEM file; `pem()` reads one.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA that signed none of the above. */
  otherCa: string;
  /** A server certificate for localhost signed by `otherCa`. */
  otherServerCert: string;
  otherServerKey: string;
  /** A certificate for `serverKey`, signed by `ca`, valid only on 1 January 2020. */
  expiredServerCert: string;
  pem(file: string): Buffer;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

function makeLeaf(dir: string, name: string, ca: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  ]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-set_serial',
    String(Math.floor(Math.random() * 1e12)),
    '-days',
    '2',
    '-out',
    `${name}.pem`,
    '-extfile',
    `${name}.ext`,
  ]);
}

/** `openssl x509` cannot date a certificate in the past; `openssl ca` can, with a minimal config. */
function makeExpired(dir: string, csr: string, out: string): void {
  writeFileSync(
    join(dir, 'expired-ca.cnf'),
    '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n',
  );
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '01\n');
  openssl(dir, [
    'ca',
    '-batch',
    '-config',
    'expired-ca.cnf',
    '-in',
    csr,
    '-out',
    out,
    '-startdate',
    '20200101000000Z',
    '-enddate',
    '20200102000000Z',
    '-keyfile',
    'ca.key',
    '-cert',
    'ca.pem',
    '-notext',
  ]);
}

const SERVER_EXT =
  'basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n';
const CLIENT_EXT = 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n';

export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-tls-'));
  makeCa(dir, 'ca');
  makeLeaf(dir, 'server', 'ca', SERVER_EXT);
  makeLeaf(dir, 'client', 'ca', CLIENT_EXT);
  makeCa(dir, 'other-ca');
  makeLeaf(dir, 'other-server', 'other-ca', SERVER_EXT);
  makeExpired(dir, 'server.csr', 'expired-server.pem');
  const file = (name: string) => join(dir, name);
  return {
    dir,
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    otherCa: file('other-ca.pem'),
    otherServerCert: file('other-server.pem'),
    otherServerKey: file('other-server.key'),
    expiredServerCert: file('expired-server.pem'),
    pem: (path: string) => readFileSync(path),
  };
}
