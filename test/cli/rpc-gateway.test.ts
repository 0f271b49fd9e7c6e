/**
 * The HTTP/JSON form of the gRPC services (issue 39 item 6) on `lattice up`'s ops server, against
 * the same process's gRPC answers: each of Predict's three patterns, the legacy RetrieveModelScore
 * and SimilaritySearch's Search, GetEmbeddings and ScoreCandidates, sent once over gRPC (binary) and
 * once as proto3 JSON over HTTP, answer the same message, byte for byte once both are decoded and
 * encoded again; then the errors: a body that is not JSON or not the message, a request the
 * orchestrator refuses at a field, an unknown model, a deadline that has passed, and caller-token auth
 * (no key, a caller token, an admin API key). One `lattice up` with caller tokens on serves it all
 * (the seeded catalog_ranker and the onboarded vss demo).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fromJson, type JsonValue, toBinary } from '@bufbuild/protobuf';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { DESCRIPTOR_SET_BASE64 } from '../../src/gen/descriptor-set.js';
import {
  OrchestratorRequestProto,
  OrchestratorResponseProto,
} from '../../src/gen/orchestrator/v1/orchestrator.js';
import { PredictRequest, PredictResponse } from '../../src/gen/orchestrator/v1/predict.js';
import { DataType } from '../../src/gen/orchestrator/v1/types.js';
import {
  GetEmbeddingsRequest,
  GetEmbeddingsResponse,
  ScoreCandidatesRequest,
  ScoreCandidatesResponse,
  SearchRequest,
  SearchResponse,
} from '../../src/gen/vss/v1/vss.js';
import { descriptorRegistry } from '../../src/platform/grpc-gateway/index.js';
import { startLattice } from '../support/lattice-up-process.js';
import { eventually } from '../support/servers.js';

/** `lattice up` starts every part and onboards the vss demo: a loaded 2-core machine has taken 50 s. */
const START_TIMEOUT_MS = 180_000;
const TOKEN = 's3cret';
const ADMIN_KEY = 'an-admin-api-key-of-the-vss-api';
const registry = descriptorRegistry(DESCRIPTOR_SET_BASE64);

interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(bytes: Uint8Array): T;
}

/** A message's bytes as the generated code writes it back: one encoding for both answers. */
const canonical = <T>(codec: Codec<T>, bytes: Uint8Array): Buffer =>
  Buffer.from(codec.encode(codec.decode(bytes)).finish());

const identity = (b: Buffer) => b;

describe('HTTP/JSON beside gRPC on lattice up', () => {
  let child: ChildProcess | undefined;
  let http = '';
  let orchestrator: Client;
  let vss: Client;

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-rpc-gateway-'));
    const started = startLattice(['up'], {
      LATTICE_DATA_DIR: dataDir,
      LATTICE_CALLER_TOKENS: `console:${TOKEN}`,
      LATTICE_VSS_ADMIN_API_KEYS: ADMIN_KEY,
    });
    child = started.child;
    await eventually(
      () => started.output.stdout.includes('Ctrl-C') || started.child.exitCode !== null,
      START_TIMEOUT_MS,
      'lattice up to start',
    );
    const { stdout, stderr } = started.output;
    http = /HTTP \/healthz \/readyz \/metrics(?: \/models)?\s+(\S+)/.exec(stdout)?.[1] ?? '';
    const orchestratorAddress = /gRPC orchestrator\.v1 .*\s+(\S+)\n/.exec(stdout)?.[1];
    const vssAddress = /gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/.exec(stdout)?.[1];
    assert.ok(http && orchestratorAddress && vssAddress, `${stdout}\n${stderr}`);
    orchestrator = new Client(orchestratorAddress, credentials.createInsecure());
    vss = new Client(vssAddress, credentials.createInsecure());
  });

  after(() => {
    orchestrator?.close();
    vss?.close();
    child?.kill('SIGKILL');
  });

  /** A gRPC call with the caller token, as a client of the gRPC services makes it. */
  function grpcCall(client: Client, path: string, request: Uint8Array): Promise<Buffer> {
    const metadata = new Metadata();
    metadata.set('caller-id', 'console');
    metadata.set('caller-token', TOKEN);
    return new Promise((resolve, reject) =>
      client.makeUnaryRequest(path, identity, identity, Buffer.from(request), metadata, {}, (err, bytes) =>
        err ? reject(err) : resolve(bytes!),
      ),
    );
  }

  async function post(
    path: string,
    body: string,
    headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
  ): Promise<{ status: number; json: JsonValue; headers: Headers }> {
    const response = await fetch(`${http}/api/v1/rpc${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: response.status, json: (await response.json()) as JsonValue, headers: response.headers };
  }

  /**
   * Sends `request` over gRPC and `json` (the same request in the proto3 JSON mapping, written as a
   * curl user writes it) over HTTP, and checks both answers are the same message; returns it.
   */
  async function sameAnswer<Req, Res>(
    client: Client,
    path: string,
    request: { codec: Codec<Req>; value: Req; json: JsonValue },
    response: Codec<Res>,
  ): Promise<Res> {
    const grpcBytes = canonical(
      response,
      await grpcCall(client, path, request.codec.encode(request.value).finish()),
    );
    const { status, json } = await post(path, JSON.stringify(request.json));
    assert.equal(status, 200, JSON.stringify(json));
    const method = path.split('/');
    const desc = registry.getService(method[1]!)!.methods.find((m) => m.name === method[2])!;
    const httpBytes = canonical(response, toBinary(desc.output, fromJson(desc.output, json)));
    assert.deepEqual(httpBytes, grpcBytes, `${path}: the HTTP answer differs from the gRPC one`);
    return response.decode(grpcBytes);
  }

  const userU1 = {
    name: 'user_id',
    dataType: DataType.DATA_TYPE_STRING,
    vectorDim: 0,
    value: Buffer.from('u1'),
  };
  const userU1Json = {
    name: 'user_id',
    dataType: 'DATA_TYPE_STRING',
    value: Buffer.from('u1').toString('base64'),
  };

  test('Predict: PointWise, PairWise and SlateWise answer over HTTP/JSON as over gRPC', async () => {
    const value = PredictRequest.fromPartial({
      modelConfigId: 'catalog_ranker',
      trackingId: 'rpc-gateway-1',
      contextFeatures: [userU1],
      targets: [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }],
      pairs: [{ firstTargetIndex: 0, secondTargetIndex: 2 }],
      slates: [{ slateTargetIndices: [2, 1, 0] }],
    });
    const json = {
      model_config_id: 'catalog_ranker',
      trackingId: 'rpc-gateway-1',
      contextFeatures: [userU1Json],
      targets: [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }],
      pairs: [{ firstTargetIndex: 0, secondTargetIndex: 2 }],
      slates: [{ slateTargetIndices: [2, 1, 0] }],
    };
    const request = { codec: PredictRequest, value, json };
    // One request serves all three patterns: each answers only its own rows of it.
    const checks: [method: string, check: (answer: PredictResponse) => void][] = [
      [
        'InferPointWise',
        (point) => {
          assert.equal(point.targetScores.length, 3);
          assert.ok(point.targetScores.every((s) => s.error === '' && s.outputValues.length > 0));
        },
      ],
      ['InferPairWise', (pair) => assert.equal(pair.pairScores.length, 1)],
      ['InferSlateWise', (slate) => assert.equal(slate.slateScores.length, 1)],
    ];
    for (const [method, check] of checks) {
      check(await sameAnswer(orchestrator, `/orchestrator.v1.Predict/${method}`, request, PredictResponse));
    }
  });

  test("the console's generated example of each pattern is a request its HTTP/JSON route answers without row errors", async () => {
    for (const [pattern, method, scores] of [
      ['pointwise', 'InferPointWise', 'targetScores'],
      ['pairwise', 'InferPairWise', 'pairScores'],
      ['slatewise', 'InferSlateWise', 'slateScores'],
    ] as const) {
      const example = await fetch(`${http}/api/v1/models/catalog_ranker/example?pattern=${pattern}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(example.status, 200, pattern);
      const { status, json } = await post(`/orchestrator.v1.Predict/${method}`, await example.text());
      assert.equal(status, 200, `${pattern}: ${JSON.stringify(json)}`);
      const rows = (json as Record<string, Array<{ error: string }>>)[scores]!;
      assert.ok(rows.length > 0, `${pattern}: no ${scores}`);
      assert.deepEqual(
        rows.filter((row) => row.error !== ''),
        [],
        `${pattern}: rows with errors`,
      );
    }
  });

  test('the legacy RetrieveModelScore answers over HTTP/JSON as over gRPC', async () => {
    const entities = [
      { entity: 'catalog_id', ids: ['c1', 'c2'], features: [] },
      { entity: 'user_id', ids: ['u1'], features: [] },
    ];
    const answer = await sameAnswer(
      orchestrator,
      '/orchestrator.v1.Orchestrator/RetrieveModelScore',
      {
        codec: OrchestratorRequestProto,
        value: OrchestratorRequestProto.fromPartial({
          modelConfigId: 'catalog_ranker',
          trackingId: 't',
          entities,
        }),
        json: {
          modelConfigId: 'catalog_ranker',
          trackingId: 't',
          entities: [
            { entity: 'catalog_id', ids: ['c1', 'c2'] },
            { entity: 'user_id', ids: ['u1'] },
          ],
        },
      },
      OrchestratorResponseProto,
    );
    assert.equal(answer.componentData.length, 3, 'a header row and one row per catalog id');
  });

  test('SimilaritySearch: Search, GetEmbeddings and ScoreCandidates answer over HTTP/JSON as over gRPC', async () => {
    const search = await sameAnswer(
      vss,
      '/vss.v1.SimilaritySearch/Search',
      {
        codec: SearchRequest,
        value: SearchRequest.fromPartial({
          entity: 'catalog',
          modelName: 'products',
          variant: 'shoes',
          queries: [{ candidateId: 'c1' }],
          pageSize: 5,
          attributes: ['category', 'price'],
        }),
        json: {
          entity: 'catalog',
          modelName: 'products',
          variant: 'shoes',
          queries: [{ candidateId: 'c1' }],
          pageSize: 5,
          attributes: ['category', 'price'],
        },
      },
      SearchResponse,
    );
    assert.equal(search.results[0]!.candidates.length, 5);
    const ids = search.results[0]!.candidates.map((c) => c.id);

    const embeddings = await sameAnswer(
      vss,
      '/vss.v1.SimilaritySearch/GetEmbeddings',
      {
        codec: GetEmbeddingsRequest,
        value: GetEmbeddingsRequest.fromPartial({
          entity: 'catalog',
          modelName: 'products',
          candidateIds: ['c1', 'nope'],
        }),
        json: { entity: 'catalog', model_name: 'products', candidate_ids: ['c1', 'nope'] },
      },
      GetEmbeddingsResponse,
    );
    assert.deepEqual(
      embeddings.embeddings.map((e) => [e.id, e.found]),
      [
        ['c1', true],
        ['nope', false],
      ],
    );
    const vector = embeddings.embeddings[0]!.embedding!.values;

    const scores = await sameAnswer(
      vss,
      '/vss.v1.SimilaritySearch/ScoreCandidates',
      {
        codec: ScoreCandidatesRequest,
        value: ScoreCandidatesRequest.fromPartial({
          entity: 'catalog',
          modelName: 'products',
          embedding: { values: vector },
          candidateIds: ids,
        }),
        // Float32 values written as JSON numbers read back to the same float.
        json: { entity: 'catalog', modelName: 'products', embedding: { values: vector }, candidateIds: ids },
      },
      ScoreCandidatesResponse,
    );
    assert.deepEqual(
      scores.scores.map((s) => s.id),
      ids,
    );
    assert.ok(scores.scores.every((s) => s.found));
  });

  test('a body that is not JSON, or not the message, is 400 INVALID_ARGUMENT', async () => {
    const broken = await post('/orchestrator.v1.Predict/InferPointWise', '{"modelConfigId":');
    assert.equal(broken.status, 400);
    assert.equal((broken.json as { error: { code: string } }).error.code, 'INVALID_ARGUMENT');

    const unknownField = await post(
      '/orchestrator.v1.Predict/InferPointWise',
      '{"modelConfigId":"x","bogus":1}',
    );
    assert.equal(unknownField.status, 400);
    assert.deepEqual((unknownField.json as { error: object }).error, {
      code: 'INVALID_ARGUMENT',
      message:
        'the body is not orchestrator.v1.PredictRequest in the proto3 JSON mapping: cannot decode message orchestrator.v1.PredictRequest from JSON: key "bogus" is unknown',
      field: 'bogus',
    });

    const wrongType = await post('/vss.v1.SimilaritySearch/Search', '{"pageSize":"many"}');
    assert.equal(wrongType.status, 400);
    assert.equal((wrongType.json as { error: { field: string } }).error.field, 'page_size');
  });

  test("the service's own refusals keep their status, message and field", async () => {
    /** The gRPC error of a request, to hold the HTTP answer against. */
    async function grpcError(client: Client, path: string, bytes: Uint8Array): Promise<ServiceError> {
      const err = await grpcCall(client, path, bytes).then(
        () => undefined,
        (e: ServiceError) => e,
      );
      assert.ok(err, `${path} was answered OK`);
      return err;
    }

    // A request the orchestrator validates: its model needs user_id, which is not sent.
    const missing = { modelConfigId: 'catalog_ranker', targets: [{ id: 'c1' }] };
    const invalid = await post('/orchestrator.v1.Predict/InferPointWise', JSON.stringify(missing));
    const invalidGrpc = await grpcError(
      orchestrator,
      '/orchestrator.v1.Predict/InferPointWise',
      PredictRequest.encode(PredictRequest.fromPartial(missing)).finish(),
    );
    assert.equal(invalid.status, 400);
    assert.deepEqual((invalid.json as { error: object }).error, {
      code: 'INVALID_ARGUMENT',
      message: invalidGrpc.details,
      field: invalidGrpc.metadata.get('field')[0],
    });
    assert.equal(invalidGrpc.metadata.get('field')[0], 'user_id');

    const unknownModel = await post('/orchestrator.v1.Predict/InferPointWise', '{"modelConfigId":"nope"}');
    assert.equal(unknownModel.status, 404);
    assert.equal((unknownModel.json as { error: { code: string } }).error.code, 'NOT_FOUND');
    assert.equal((unknownModel.json as { error: { field: string } }).error.field, 'model_config_id');

    const unknownVssModel = await post(
      '/vss.v1.SimilaritySearch/GetEmbeddings',
      '{"entity":"no","modelName":"pe","candidateIds":["c1"]}',
    );
    assert.equal(unknownVssModel.status, 404, JSON.stringify(unknownVssModel.json));
  });

  test("a deadline header is the call's deadline: past it, 504 DEADLINE_EXCEEDED; malformed, 400", async () => {
    const body = JSON.stringify({
      modelConfigId: 'catalog_ranker',
      contextFeatures: [userU1Json],
      targets: [{ id: 'c1' }],
    });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const expired = await post('/orchestrator.v1.Predict/InferPointWise', body, {
      ...auth,
      'x-lattice-deadline-ms': '0',
    });
    assert.equal(expired.status, 504);
    assert.equal((expired.json as { error: { code: string } }).error.code, 'DEADLINE_EXCEEDED');
    const grpcTimeout = await post('/orchestrator.v1.Predict/InferPointWise', body, {
      ...auth,
      'grpc-timeout': '0n',
    });
    assert.equal(grpcTimeout.status, 504);
    const roomy = await post('/orchestrator.v1.Predict/InferPointWise', body, {
      ...auth,
      'x-lattice-deadline-ms': '60000',
    });
    assert.equal(roomy.status, 200);
    const malformed = await post('/orchestrator.v1.Predict/InferPointWise', body, {
      ...auth,
      'x-lattice-deadline-ms': 'soon',
    });
    assert.equal(malformed.status, 400);
    assert.equal((malformed.json as { error: { field: string } }).error.field, 'X-Lattice-Deadline-Ms');
  });

  test('auth: no key is 401, a caller token is 200 (also as the header pair), an admin API key is 403', async () => {
    const body = JSON.stringify({
      modelConfigId: 'catalog_ranker',
      contextFeatures: [userU1Json],
      targets: [{ id: 'c1' }],
    });
    const path = '/orchestrator.v1.Predict/InferPointWise';
    const none = await post(path, body, {});
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="lattice"');
    assert.equal((await post(path, body, { authorization: 'Bearer wrong' })).status, 401);
    assert.equal((await post(path, body, { authorization: `Bearer ${TOKEN}` })).status, 200);
    assert.equal((await post(path, body, { 'caller-id': 'console', 'caller-token': TOKEN })).status, 200);
    const admin = await post(path, body, { authorization: `Bearer ${ADMIN_KEY}` });
    assert.equal(admin.status, 403);
    assert.equal((admin.json as { error: { code: string } }).error.code, 'PERMISSION_DENIED');
  });
});
