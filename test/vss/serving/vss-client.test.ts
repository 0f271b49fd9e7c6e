/**
 * `lattice/vss-client`'s VssClient against real vss serving (the serving test world) with caller
 * tokens on and TLS: every SimilaritySearch RPC with plain values (one search, several queries in
 * one call, embeddings, scores), and the refusals a caller sees: no token, a wrong one, a caller id
 * without its token, an untrusted server certificate, a query the server could not answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { serveTlsByDefault } from '../../../src/platform/http/index.js';
import { VssClient } from '../../../src/vss/client.js';
import { makeTestCertificates } from '../../platform/tls/certificates.js';
import { ENTITY, MODEL, openWorld, type World } from './harness.js';

const certs = makeTestCertificates();
const caller = { callerId: 'shop', callerToken: 's3cret' };
const tls = { ca: certs.pem(certs.ca) };

describe('VssClient (lattice/vss-client), tokens and TLS on', () => {
  let world: World;
  let address: string;
  let vss: VssClient;
  before(async () => {
    // The server of this world serves TLS (read when it is created) and wants caller tokens.
    serveTlsByDefault({
      cert: certs.pem(certs.serverCert),
      key: certs.pem(certs.serverKey),
      clientAuth: 'off',
    });
    try {
      world = await openWorld({
        server: { auth: { tokens: { shop: 's3cret' }, idHeader: 'caller-id', tokenHeader: 'caller-token' } },
      });
    } finally {
      serveTlsByDefault(undefined);
    }
    address = `127.0.0.1:${world.server.port}`;
    vss = new VssClient(address, { ...caller, tls });
  });
  after(async () => {
    vss?.close();
    await world?.close();
  });

  test('search: one page by id with attributes and filters, the next page by token, by vector', async () => {
    const [id] = world.fixture.ids;
    const base = { entity: ENTITY, model: MODEL, variant: 'organic', pageSize: 5 };
    const first = await vss.search({ ...base, id: id!, attributes: ['brand', 'price'] });
    assert.equal(first.candidates.length, 5);
    assert.ok(
      first.candidates.every((c) => c.id !== id && typeof c.score === 'number' && c.attributes.brand),
    );
    assert.ok(first.nextPageToken);
    const second = await vss.search({ ...base, id: id!, pageToken: first.nextPageToken });
    assert.equal(second.candidates.length, 5);
    const seen = new Set(first.candidates.map((c) => c.id));
    assert.ok(
      second.candidates.every((c) => !seen.has(c.id)),
      'pages do not repeat',
    );
    const filtered = await vss.search({
      ...base,
      vector: Array.from(world.fixture.vector(3)),
      filters: [{ field: 'brand', op: 'IN', values: ['b'] }],
      attributes: ['brand'],
    });
    assert.ok(filtered.candidates.length > 0);
    for (const c of filtered.candidates) assert.equal(c.attributes.brand, 'b');
  });

  test('searchMany: queries answered in order, one that failed alone carries its error', async () => {
    const [a, b] = world.fixture.ids;
    const pages = await vss.searchMany({
      entity: ENTITY,
      model: MODEL,
      variant: 'organic',
      pageSize: 3,
      queries: [
        { id: a! },
        { id: 'no-such-candidate' },
        { id: b!, filters: [{ field: 'tag', op: 'EXISTS' }] },
      ],
      attributes: ['tag'],
    });
    assert.equal(pages.length, 3);
    assert.equal(pages[0]!.candidates.length, 3);
    assert.equal(pages[0]!.error, '');
    assert.match(pages[1]!.error, /^NOT_FOUND: candidate "no-such-candidate"/);
    assert.deepEqual(pages[1]!.candidates, []);
    assert.ok(pages[2]!.candidates.length > 0);
    for (const c of pages[2]!.candidates) assert.equal(c.attributes.tag, 'hot');
    // The single-query search rejects with the query's own code.
    await assert.rejects(
      vss.search({ entity: ENTITY, model: MODEL, variant: 'organic', id: 'no-such-candidate' }),
      (err) => isLatticeError(err, 'NOT_FOUND') && /no-such-candidate/.test(err.message),
    );
  });

  test('getEmbeddings and scoreCandidates: in request order, unknown ids not found', async () => {
    const [a, b] = world.fixture.ids;
    const embeddings = await vss.getEmbeddings({ entity: ENTITY, model: MODEL, ids: [b!, 'nope', a!] });
    assert.deepEqual(
      embeddings.map((e) => [e.id, e.found]),
      [
        [b, true],
        ['nope', false],
        [a, true],
      ],
    );
    assert.deepEqual(embeddings[2]!.embedding, Array.from(world.fixture.vector(0)));
    assert.deepEqual(embeddings[2]!.searchEmbedding, Array.from(world.fixture.vector(0)));
    assert.deepEqual(embeddings[1]!.embedding, []);

    const scores = await vss.scoreCandidates({
      entity: ENTITY,
      model: MODEL,
      vector: Array.from(world.fixture.vector(0)),
      ids: [a!, 'nope', b!],
    });
    assert.deepEqual(
      scores.map((s) => [s.id, s.found]),
      [
        [a, true],
        ['nope', false],
        [b, true],
      ],
    );
    // COSINE of a vector with itself.
    assert.ok(Math.abs(scores[0]!.score - 1) < 1e-5, String(scores[0]!.score));
    assert.ok(scores[2]!.score < scores[0]!.score);
  });

  test('without a token, with a wrong one, or an untrusted server: refused; an id without its token is the caller’s mistake', async () => {
    const query = { entity: ENTITY, model: MODEL, ids: [world.fixture.ids[0]!] };
    const anonymous = new VssClient(address, { tls });
    const wrong = new VssClient(address, { callerId: 'shop', callerToken: 'guess', tls });
    const untrusted = new VssClient(address, { ...caller, tls: { ca: certs.pem(certs.otherCa) } });
    const plaintext = new VssClient(address, caller);
    try {
      await assert.rejects(anonymous.getEmbeddings(query), { code: status.UNAUTHENTICATED });
      await assert.rejects(wrong.getEmbeddings(query), { code: status.UNAUTHENTICATED });
      await assert.rejects(untrusted.getEmbeddings(query), { code: status.UNAVAILABLE });
      await assert.rejects(plaintext.getEmbeddings(query), { code: status.UNAVAILABLE });
    } finally {
      for (const client of [anonymous, wrong, untrusted, plaintext]) client.close();
    }
    await assert.rejects(
      vss.search({ entity: ENTITY, model: MODEL, variant: 'organic' }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'id',
    );
    await assert.rejects(
      vss.searchMany({
        entity: ENTITY,
        model: MODEL,
        variant: 'organic',
        queries: [{ id: 'a' }, { id: 'b', vector: [1] }],
      }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'queries[1]',
    );
    assert.throws(
      () => new VssClient(address, { callerId: 'shop', tls }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'callerToken',
    );
  });
});
