/**
 * Issue 13: every RPC of both services (`lattice orchestrator` and `lattice vss serving`, each its
 * own process) gets seeded mutated requests — byte-level (truncated, bit flips, bad lengths, wrong
 * wire types, deep nesting, random bytes, invalid UTF-8) and structural (valid protobuf with wrong
 * values) — and must answer each with a documented status; INVALID_ARGUMENT must name the field.
 * The known-good requests must answer correctly every CHECK_EVERY requests and at the end, and the
 * orchestrator's /healthz still answers 200 after its fuzz. (The Predict mutations of the former
 * orchestrator-fuzz.test.ts live in orchestrator-rpcs.ts, as does its second mutation that adds an
 * invalid context feature on top of the first.)
 * Bounded: at most REQUESTS per RPC and MAX_MS_PER_RPC each (under a minute in all). `npm run fuzz` is the long run (10,000 per RPC).
 */
import assert from 'node:assert/strict';
import { setPriority } from 'node:os';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { GetEmbeddingsRequest, ScoreCandidatesRequest, SearchRequest } from '../../../src/gen/vss/v1/vss.js';
import { callRaw, type FuzzRpc, fuzzRpc, judge, rawClient } from './fuzz-runner.js';
import { KNOWN_ISSUES } from './known-issues.js';
import { type FuzzService, type FuzzServices, startFuzzServices } from './services.js';

const REQUESTS = 250;
/** Per RPC: on a slow or busy machine the seeded sequence is cut short here, after at least MIN_REQUESTS. */
const MAX_MS_PER_RPC = 7000;
const MIN_REQUESTS = 50;
const CHECK_EVERY = 50;
const IN_FLIGHT = 8;
const SEED = 1300;
const NICE = 10;
// Load beside other test files: this process and its children yield CPU to timing-sensitive tests.
setPriority(NICE);

describe('both services under fuzzed requests (issue 13)', () => {
  let services: FuzzServices;
  const clients = new Map<string, Client>();
  const client = (service: FuzzService) => {
    const c = clients.get(service.name) ?? rawClient(service.address);
    clients.set(service.name, c);
    return c;
  };

  before(async () => {
    services = await startFuzzServices({ nice: NICE });
  });
  after(async () => {
    for (const c of clients.values()) c.close();
    const codes = await services?.stop();
    assert.deepEqual(codes, { orchestrator: 0, vss: 0 }, 'both processes exit cleanly');
  });

  const fuzzAll = (serviceOf: () => FuzzService, names: string[]) => {
    names.forEach((method, i) => {
      test(`${method}: up to ${REQUESTS} mutated requests, each a documented status naming the field; the known-good request still right`, async () => {
        const service = serviceOf();
        const rpc = service.rpcs.find((r) => r.path.endsWith(`/${method}`))!;
        const report = await fuzzRpc(client(service), rpc, {
          requests: REQUESTS,
          inFlight: IN_FLIGHT,
          seed: SEED + i,
          checkEvery: CHECK_EVERY,
          maxMs: MAX_MS_PER_RPC,
          minRequests: MIN_REQUESTS,
          knownGood: service.knownGood,
          knownIssues: KNOWN_ISSUES,
        });
        console.log(
          `# ${rpc.path}: ${report.requests} in ${report.ms} ms ${JSON.stringify(report.statuses)}` +
            (Object.keys(report.knownIssueHits).length
              ? ` known issues: ${JSON.stringify(report.knownIssueHits)}`
              : ''),
        );
        assert.deepEqual(report.failures.slice(0, 10), [], JSON.stringify(report.failureKinds));
        assert.ok(report.requests >= MIN_REQUESTS, `only ${report.requests} requests`);
        assert.equal(service.exited(), undefined, 'the process is alive');
      });
    });
  };
  describe('orchestrator', () => {
    fuzzAll(
      () => services.orchestrator,
      ['InferPointWise', 'InferPairWise', 'InferSlateWise', 'RetrieveModelScore'],
    );
    test('after its fuzz the orchestrator still reports itself healthy', async () => {
      const health = await fetch(`${services.orchestrator.opsUrl}/healthz`);
      assert.equal(health.status, 200, await health.text());
    });
  });
  describe('vss serving', () => {
    fuzzAll(() => services.vss, ['Search', 'GetEmbeddings', 'ScoreCandidates']);
  });

  /** The one request `bytes` to `rpc`, judged by `expect`. */
  const expectAnswer = async (
    service: () => FuzzService,
    method: string,
    bytes: Uint8Array,
    codes: status[],
    field?: RegExp,
  ) => {
    const s = service();
    const rpc: FuzzRpc = s.rpcs.find((r) => r.path.endsWith(`/${method}`))!;
    const { error } = await callRaw(client(s), rpc.path, bytes, 10_000);
    const { wrong } = judge(rpc, { codes, field }, error);
    assert.equal(wrong, undefined);
  };

  describe('bugs the fuzz found, fixed (regression tests)', () => {
    const vss = () => services.vss;
    test('GetEmbeddings for entity "catalog\\0": NOT_FOUND', async () => {
      const bytes = GetEmbeddingsRequest.encode({
        entity: 'catalog\u0000',
        modelName: 'clip',
        candidateIds: ['p1'],
      }).finish();
      await expectAnswer(
        vss,
        'GetEmbeddings',
        bytes,
        [status.NOT_FOUND, status.INVALID_ARGUMENT],
        /^entity$/,
      );
    });
    test('Search for model "\\0": NOT_FOUND', async () => {
      const bytes = SearchRequest.encode({
        entity: 'catalog',
        modelName: '\u0000',
        variant: 'organic',
        queries: [{ candidateId: 'p1', pageToken: '', filters: [] }],
        pageSize: 5,
        searchWidth: 0,
        attributes: [],
        filters: [],
      }).finish();
      await expectAnswer(vss, 'Search', bytes, [status.NOT_FOUND, status.INVALID_ARGUMENT], /^model_name$/);
    });
    test('Search by candidate id "p1\\0": OK, its result says not found', async () => {
      const bytes = SearchRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        variant: 'organic',
        queries: [{ candidateId: 'p1\u0000', pageToken: '', filters: [] }],
        pageSize: 5,
        searchWidth: 0,
        attributes: [],
        filters: [],
      }).finish();
      await expectAnswer(vss, 'Search', bytes, [status.OK]);
    });
    test('ScoreCandidates with candidate id "\\0": OK, not found', async () => {
      const bytes = ScoreCandidatesRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        embedding: { values: [1, 0, 0, 0, 0, 0, 0, 0] },
        candidateIds: ['p1', '\u0000'],
      }).finish();
      await expectAnswer(
        vss,
        'ScoreCandidates',
        bytes,
        [status.OK, status.INVALID_ARGUMENT],
        /^candidate_ids\[1\]$/,
      );
    });
    test('GetEmbeddings with a 2,000-character id: the error names candidate_ids[1]', async () => {
      const bytes = GetEmbeddingsRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        candidateIds: ['p1', 'p'.repeat(2000)],
      }).finish();
      await expectAnswer(
        vss,
        'GetEmbeddings',
        bytes,
        [status.OK, status.INVALID_ARGUMENT],
        /^candidate_ids\[1\]$/,
      );
    });
    test('Search by a 2,000-character candidate id: the error names queries[0].candidate_id', async () => {
      const bytes = SearchRequest.encode({
        entity: 'catalog',
        modelName: 'clip',
        variant: 'organic',
        queries: [{ candidateId: 'p'.repeat(2000), pageToken: '', filters: [] }],
        pageSize: 5,
        searchWidth: 0,
        attributes: [],
        filters: [],
      }).finish();
      await expectAnswer(
        vss,
        'Search',
        bytes,
        [status.OK, status.INVALID_ARGUMENT],
        /^queries\[0\]\.candidate_id$/,
      );
    });
  });
});
