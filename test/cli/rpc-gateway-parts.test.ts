/**
 * `lattice orchestrator` and `lattice vss serving` each serve the HTTP/JSON form of their own gRPC
 * services on their ops server, answering what their gRPC server answers (the full comparison of
 * every method is rpc-gateway.test.ts, on `lattice up`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { PredictRequest, PredictResponse } from '../../src/gen/orchestrator/v1/predict.js';
import { DataType } from '../../src/gen/orchestrator/v1/types.js';
import { SearchRequest } from '../../src/gen/vss/v1/vss.js';
import { startLatticeVss } from '../support/lattice-vss-process.js';
import { startOrchestratorProcess } from '../support/orchestrator-process.js';
import { startReferenceServers } from '../support/stack.js';

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const identity = (b: Buffer) => b;

function grpcCall(address: string, path: string, request: Uint8Array): Promise<Buffer> {
  const client = new Client(address, credentials.createInsecure());
  return new Promise<Buffer>((resolve, reject) =>
    client.makeUnaryRequest(
      path,
      identity,
      identity,
      Buffer.from(request),
      new Metadata(),
      {},
      (err, bytes) => (err ? reject(err) : resolve(bytes!)),
    ),
  ).finally(() => client.close());
}

interface Answer {
  status: number;
  json: { targetScores: { outputValues: string[] }[]; error: unknown };
}

async function post(base: string, path: string, body: unknown): Promise<Answer> {
  const response = await fetch(`${base}/api/v1/rpc${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Answer['json'] };
}

test('lattice orchestrator answers Predict over HTTP/JSON as over gRPC', async () => {
  const servers = await startReferenceServers();
  cleanups.push(() => servers.stop());
  const orchestrator = await startOrchestratorProcess({
    configDir: servers.configDir,
    featureStoreTarget: servers.targets.featureStore,
  });
  cleanups.push(() => orchestrator.stop());
  const request = PredictRequest.fromPartial({
    modelConfigId: 'catalog_ranker',
    trackingId: 'parts',
    contextFeatures: [{ name: 'user_id', dataType: DataType.DATA_TYPE_STRING, value: Buffer.from('u1') }],
    targets: [{ id: 'c1' }, { id: 'c2' }],
  });
  const path = '/orchestrator.v1.Predict/InferPointWise';
  const grpc = PredictResponse.decode(
    await grpcCall(orchestrator.address, path, PredictRequest.encode(request).finish()),
  );
  const http = await post(orchestrator.opsUrl, path, {
    modelConfigId: 'catalog_ranker',
    trackingId: 'parts',
    contextFeatures: [{ name: 'user_id', dataType: 'DATA_TYPE_STRING', value: 'dTE=' }],
    targets: [{ id: 'c1' }, { id: 'c2' }],
  });
  assert.equal(http.status, 200, JSON.stringify(http.json));
  assert.equal(grpc.targetScores.length, 2);
  assert.deepEqual(
    http.json.targetScores.map((s) => s.outputValues),
    grpc.targetScores.map((s) => s.outputValues.map((v) => Buffer.from(v).toString('base64'))),
  );
});

test('lattice vss serving answers Search over HTTP/JSON as over gRPC', async () => {
  const vss = await startLatticeVss({
    command: 'vss serving',
    env: { LATTICE_DATA_DIR: mkdtempSync(join(tmpdir(), 'lattice-rpc-vss-')) },
  });
  cleanups.push(() => vss.stop());
  const search = {
    entity: 'catalog',
    modelName: 'products',
    variant: 'all',
    queries: [{ candidateId: 'c1' }],
  };
  const path = '/vss.v1.SimilaritySearch/Search';
  const refused = await grpcCall(
    vss.servingAddress!,
    path,
    SearchRequest.encode(SearchRequest.fromPartial(search)).finish(),
  ).then(
    () => assert.fail('an unregistered entity was answered OK'),
    (err: ServiceError) => err,
  );
  const http = await post(vss.opsUrl, path, search);
  assert.equal(http.status, 404);
  assert.deepEqual(http.json.error, {
    code: 'NOT_FOUND',
    message: refused.details,
    field: refused.metadata.get('field')[0],
  });
});
