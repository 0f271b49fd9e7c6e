import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import { DataType } from '../../../src/datatypes/data-type.js';
import {
  GRPCInferenceServiceService,
  type InferTensorContents,
  type ModelInferRequest,
  type ModelInferResponse,
  type ModelMetadataRequest,
  type ModelMetadataResponse,
  type ModelReadyRequest,
  type ModelReadyResponse,
  type ServerReadyRequest,
  type ServerReadyResponse,
} from '../../../src/gen/inference/grpc_service.js';
import { KServeClient, kserveDatatype, type Tensor } from '../../../src/orchestrator/clients/index.js';
import {
  type Plumbing,
  plumbing,
  rejectsWith,
  startServer,
  type TestServer,
  within,
} from './grpc-fixtures.js';

/** BYTES elements as KServe lays them out: each a 4-byte little-endian length, then its bytes. */
function bytesElements(values: string[]): Buffer {
  return Buffer.concat(
    values.flatMap((v) => {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(Buffer.byteLength(v));
      return [length, Buffer.from(v)];
    }),
  );
}

function splitBytesElements(data: Uint8Array): string[] {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: string[] = [];
  for (let at = 0; at < buffer.length; ) {
    const n = buffer.readUInt32LE(at);
    out.push(buffer.subarray(at + 4, at + 4 + n).toString());
    at += 4 + n;
  }
  return out;
}

const f32s = (...xs: number[]) => Buffer.from(new Float32Array(xs).buffer);
const emptyContents = (): InferTensorContents => ({
  boolContents: [],
  intContents: [],
  int64Contents: [],
  uintContents: [],
  uint64Contents: [],
  fp32Contents: [],
  fp64Contents: [],
  bytesContents: [],
});
const output = (name: string, datatype: string, shape: number[], contents?: InferTensorContents) => ({
  name,
  datatype,
  shape: shape.map(BigInt),
  parameters: {},
  contents,
});

/** What the fake server answers to ModelInfer; the default sums each row of input `x` into `y` and echoes `ids`. */
type Answer = (request: ModelInferRequest) => ModelInferResponse;
function sumAndEcho(request: ModelInferRequest): ModelInferResponse {
  const x = request.rawInputContents[0]!;
  const [rows, cols] = request.inputs[0]!.shape.map(Number) as [number, number];
  const sums = new Float32Array(rows);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) sums[r]! += Buffer.from(x).readFloatLE((r * cols + c) * 4);
  return {
    modelName: request.modelName,
    modelVersion: '1',
    id: '',
    parameters: {},
    outputs: [output('y', 'FP32', [rows, 1]), output('ids', 'BYTES', [rows])],
    rawOutputContents: [Buffer.from(sums.buffer), request.rawInputContents[1]!],
  };
}

describe('KServeClient over inference.GRPCInferenceService', () => {
  let server: TestServer;
  let io: Plumbing;
  let client: KServeClient;
  const received: ModelInferRequest[] = [];
  let answer: Answer = sumAndEcho;
  const options = () => ({ signal: new AbortController().signal, deadline: within(10_000) });

  before(async () => {
    server = await startServer((s) =>
      s.addService(GRPCInferenceServiceService, {
        modelInfer: (
          call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>,
          cb: sendUnaryData<ModelInferResponse>,
        ) => {
          received.push(call.request);
          cb(null, answer(call.request));
        },
        serverReady: (
          _call: ServerUnaryCall<ServerReadyRequest, ServerReadyResponse>,
          cb: sendUnaryData<ServerReadyResponse>,
        ) => cb(null, { ready: true }),
        modelReady: (
          call: ServerUnaryCall<ModelReadyRequest, ModelReadyResponse>,
          cb: sendUnaryData<ModelReadyResponse>,
        ) => cb(null, { ready: call.request.name === 'ctr' && ['', '3'].includes(call.request.version) }),
        modelMetadata: (
          call: ServerUnaryCall<ModelMetadataRequest, ModelMetadataResponse>,
          cb: sendUnaryData<ModelMetadataResponse>,
        ) => {
          if (call.request.name !== 'ctr') {
            cb({ code: status.NOT_FOUND, details: `unknown model ${call.request.name}` }, null);
            return;
          }
          cb(null, {
            name: 'ctr',
            versions: ['3'],
            platform: 'onnxruntime_onnx',
            inputs: [{ name: 'features', datatype: 'FP32', shape: [-1n, 4n] }],
            outputs: [{ name: 'score', datatype: 'BF16', shape: [-1n, 1n] }],
          });
        },
      }),
    );
    io = plumbing();
    client = new KServeClient(io.policy);
  });
  after(async () => {
    io.close();
    await server.stop();
  });

  const request = (inputs: Tensor[], outputs = ['y', 'ids']) => ({
    modelName: 'ctr',
    modelVersion: '3',
    inputs,
    outputs,
  });
  const x: Tensor = { name: 'x', dataType: DataType.FP32, shape: [2, 2], data: f32s(1, 2, 3, 4) };
  const ids: Tensor = {
    name: 'ids',
    dataType: DataType.STRING,
    shape: [2],
    data: bytesElements(['c1', 'ç-2']),
  };

  test('sends raw_input_contents in input order with KServe datatypes, reads raw outputs', async () => {
    received.length = 0;
    const flags: Tensor = {
      name: 'flags',
      dataType: DataType.BOOL,
      shape: [2, 1],
      data: Uint8Array.of(1, 0),
    };
    const counts: Tensor = {
      name: 'counts',
      dataType: DataType.INT64,
      shape: [2, 1],
      data: new Uint8Array(new BigInt64Array([5n, -1n]).buffer),
    };
    const outputs = await client.infer(server.target, request([x, ids, flags, counts]), options());
    const sent = received[0]!;
    assert.equal(sent.modelName, 'ctr');
    assert.equal(sent.modelVersion, '3');
    assert.deepEqual(
      sent.inputs.map((i) => [i.name, i.datatype, i.shape.map(Number), i.contents]),
      [
        ['x', 'FP32', [2, 2], undefined],
        ['ids', 'BYTES', [2], undefined],
        ['flags', 'BOOL', [2, 1], undefined],
        ['counts', 'INT64', [2, 1], undefined],
      ],
    );
    assert.deepEqual(
      sent.outputs.map((o) => o.name),
      ['y', 'ids'],
    );
    assert.equal(sent.rawInputContents.length, 4);
    assert.deepEqual(sent.rawInputContents[0], f32s(1, 2, 3, 4));
    // BYTES: each element a 4-byte little-endian length, then its UTF-8 bytes.
    assert.deepEqual(
      [...sent.rawInputContents[1]!],
      [2, 0, 0, 0, 0x63, 0x31, 4, 0, 0, 0, 0xc3, 0xa7, 0x2d, 0x32],
    );
    assert.deepEqual([...sent.rawInputContents[2]!], [1, 0]);
    assert.equal(Buffer.from(sent.rawInputContents[3]!).readBigInt64LE(8), -1n);

    const [y, echoed] = outputs;
    assert.equal(y!.name, 'y');
    assert.equal(y!.dataType, DataType.FP32);
    assert.deepEqual(y!.shape, [2, 1]);
    assert.deepEqual([...new Float32Array(Uint8Array.from(y!.data).buffer)], [3, 7]);
    assert.equal(echoed!.dataType, DataType.STRING);
    assert.deepEqual(splitBytesElements(echoed!.data), ['c1', 'ç-2']);
  });

  test('falls back to typed contents when the server sends no raw outputs', async () => {
    answer = () => {
      const fp = emptyContents();
      fp.fp32Contents = [0.5, 1.5];
      const i64 = emptyContents();
      i64.int64Contents = [7n, -9007199254740993n];
      const text = emptyContents();
      text.bytesContents = [Buffer.from('a'), Buffer.from('bc')];
      const flags = emptyContents();
      flags.boolContents = [true, false];
      const small = emptyContents();
      small.intContents = [-3, 100];
      return {
        modelName: 'ctr',
        modelVersion: '3',
        id: '',
        parameters: {},
        outputs: [
          output('y', 'FP32', [2, 1], fp),
          output('n', 'INT64', [2], i64),
          output('s', 'BYTES', [2], text),
          output('b', 'BOOL', [2], flags),
          output('i8', 'INT8', [2], small),
        ],
        rawOutputContents: [],
      };
    };
    try {
      const [y, n, s, b, i8] = await client.infer(server.target, request([x, ids]), options());
      assert.deepEqual([...new Float32Array(Uint8Array.from(y!.data).buffer)], [0.5, 1.5]);
      assert.equal(n!.dataType, DataType.INT64);
      assert.deepEqual([...new BigInt64Array(Uint8Array.from(n!.data).buffer)], [7n, -9007199254740993n]);
      assert.deepEqual(splitBytesElements(s!.data), ['a', 'bc']);
      assert.deepEqual([...b!.data], [1, 0]);
      assert.deepEqual([...new Int8Array(Uint8Array.from(i8!.data).buffer)], [-3, 100]);
    } finally {
      answer = sumAndEcho;
    }
  });

  test('BF16 outputs are widened to FP32', async () => {
    // bfloat16 is the high half of a float32: 1.5 = 0x3FC0, -2 = 0xC000.
    answer = () => ({
      modelName: 'ctr',
      modelVersion: '3',
      id: '',
      parameters: {},
      outputs: [output('y', 'BF16', [2, 1])],
      rawOutputContents: [Buffer.from([0xc0, 0x3f, 0x00, 0xc0])],
    });
    try {
      const [y] = await client.infer(server.target, request([x, ids], ['y']), options());
      assert.equal(y!.dataType, DataType.FP32);
      assert.deepEqual([...new Float32Array(Uint8Array.from(y!.data).buffer)], [1.5, -2]);
    } finally {
      answer = sumAndEcho;
    }
  });

  test('an output that does not fit its datatype and shape is an error naming target, model and output', async () => {
    answer = (r) => ({ ...sumAndEcho(r), rawOutputContents: [f32s(1), sumAndEcho(r).rawOutputContents[1]!] });
    try {
      await rejectsWith(
        client.infer(server.target, request([x, ids]), options()),
        'INTERNAL',
        new RegExp(
          `model server ${server.target}: model ctr: output y: shape \\[2, 1\\] of FP32 takes 8 bytes, got 4`,
        ),
      );
      answer = (r) => ({ ...sumAndEcho(r), rawOutputContents: [f32s(1, 2)] });
      await rejectsWith(
        client.infer(server.target, request([x, ids]), options()),
        'INTERNAL',
        /2 outputs but 1 raw_output_contents entries/,
      );
      answer = (r) => ({ ...sumAndEcho(r), rawOutputContents: [f32s(1, 2), Buffer.from([9, 0, 0, 0, 1])] });
      await rejectsWith(
        client.infer(server.target, request([x, ids]), options()),
        'INTERNAL',
        /output ids: BYTES element 0 runs past the end/,
      );
    } finally {
      answer = sumAndEcho;
    }
  });

  test('inputs that do not fit their type are rejected before anything is sent', async () => {
    received.length = 0;
    const cases: [Tensor, RegExp][] = [
      [{ ...x, data: f32s(1, 2, 3) }, /input x: shape \[2, 2\] of FP32 takes 16 bytes, got 12/],
      [{ ...ids, data: bytesElements(['only one']) }, /input ids: shape \[2\] needs 2 BYTES elements, got 1/],
      [
        { ...ids, data: Buffer.from([5, 0]) },
        /input ids: BYTES element 0 has a truncated 4-byte length prefix/,
      ],
      [
        { name: 'q', dataType: DataType.FP8E4M3, shape: [1], data: Uint8Array.of(1) },
        /FP8E4M3 has no KServe v2 datatype/,
      ],
    ];
    for (const [tensor, message] of cases) {
      await rejectsWith(
        client.infer(server.target, request([tensor]), options()),
        'INVALID_ARGUMENT',
        message,
      );
    }
    assert.equal(received.length, 0);
  });

  test('datatype names of every type KServe carries; vectors travel as their elements', () => {
    assert.equal(kserveDatatype(DataType.FP16), 'FP16');
    assert.equal(kserveDatatype(DataType.FP64), 'FP64');
    assert.equal(kserveDatatype(DataType.UINT64), 'UINT64');
    assert.equal(kserveDatatype(DataType.INT8), 'INT8');
    assert.equal(kserveDatatype(DataType.STRING), 'BYTES');
    assert.equal(kserveDatatype(DataType.FP32_VECTOR), 'FP32');
    assert.equal(kserveDatatype(DataType.BOOL), 'BOOL');
  });

  test('ServerReady, ModelReady and ModelMetadata', async () => {
    assert.equal(await client.serverReady(server.target), true);
    assert.equal(await client.modelReady(server.target, 'ctr'), true);
    assert.equal(await client.modelReady(server.target, 'ctr', '3'), true);
    assert.equal(await client.modelReady(server.target, 'ctr', '4'), false);
    const metadata = await client.modelMetadata(server.target, 'ctr');
    assert.deepEqual(metadata, {
      name: 'ctr',
      versions: ['3'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'features', datatype: 'FP32', dataType: DataType.FP32, shape: [-1, 4] }],
      outputs: [{ name: 'score', datatype: 'BF16', dataType: undefined, shape: [-1, 1] }],
    });
    await rejectsWith(client.modelMetadata(server.target, 'nope'), 'NOT_FOUND', /unknown model nope/);
  });
});
