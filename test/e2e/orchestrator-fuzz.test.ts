/**
 * Fuzzing `lattice orchestrator` (its own process) with 10,000 corrupted PredictRequests from a
 * seeded generator, sent with the raw generated client 32 at a time: every one must be answered
 * INVALID_ARGUMENT or NOT_FOUND, and the process must keep serving valid requests afterwards.
 */
import assert from 'node:assert/strict';
import { setPriority } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import {
  PredictClient,
  type PredictRequest,
  type PredictResponse,
} from '../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../src/gen/orchestrator/v1/types.js';
import { seededRandom } from '../../src/modelserver/onnx-builder.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import {
  DUO_ID,
  duoConfig,
  duoScore,
  type OrchestratorProcess,
  startOrchestratorProcess,
  writeDuoModel,
} from '../support/orchestrator-process.js';
import { type ReferenceServers, startReferenceServers } from '../support/stack.js';

type Method = 'inferPointWise' | 'inferPairWise' | 'inferSlateWise';
const REQUESTS = 10_000;
const IN_FLIGHT = 32;
const NICE = 15;
// This file is load: run it (this process and its child) at low priority from the start, so
// timing-sensitive tests running beside it (50 ms feature store deadlines) keep their CPU.
setPriority(NICE);

/** Positions in `Corruptor.common` of the corruptions that only add an invalid context feature. */
const ADDITIVE = [1, 3, 15, 16];

/** The large corruptions share these (read-only) arrays, so the generator does not dominate the run. */
const MANY_TARGETS = Array.from({ length: 200_000 }, () => ({ id: '', featureValues: [] }));
const MANY_VALUES = Array.from({ length: 50_000 }, () => Buffer.alloc(0));

const fp32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};

/** A generator of corrupted requests: a valid request for the duo model, then one or more corruptions that each make it invalid. */
class Corruptor {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = seededRandom(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  /** A length in 0..n that is not `not`. */
  wrongLength(not: number): number {
    const candidates = [0, 1, 2, 3, 5, 6, 7, 8, 9, 16, 100].filter((n) => n !== not);
    return this.pick(candidates);
  }

  valid(method: Method): PredictRequest {
    const targets = 1 + this.int(6);
    const request: PredictRequest = {
      modelConfigId: DUO_ID,
      trackingId: `fuzz-${this.int(1e9)}`,
      contextFeatures: [],
      targetInputSchema: [
        { name: 'price', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
        { name: 'quality', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
      ],
      targets: Array.from({ length: targets }, (_, i) => ({
        id: `t${i}`,
        featureValues: [fp32(this.next() * 4 - 2), fp32(this.next() * 4 - 2)],
      })),
      pairInputSchema: [],
      pairs: [],
      slateInputSchema: [],
      slates: [],
      returnTargetScores: this.next() < 0.5,
    };
    const weight = { name: 'weight', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 };
    if (method === 'inferPointWise') request.contextFeatures.push({ ...weight, value: fp32(1) });
    else if (method === 'inferPairWise') {
      request.pairInputSchema = [weight];
      request.pairs = Array.from({ length: 1 + this.int(4) }, () => ({
        firstTargetIndex: this.int(targets),
        secondTargetIndex: this.int(targets),
        featureValues: [fp32(this.next())],
      }));
    } else {
      request.slateInputSchema = [weight];
      request.slates = Array.from({ length: 1 + this.int(4) }, () => ({
        slateTargetIndices: Array.from({ length: 1 + this.int(targets) }, () => this.int(targets)),
        featureValues: [fp32(this.next())],
      }));
    }
    return request;
  }

  /** Corruptions that apply to every pattern; each returns its name. */
  private readonly common: ((r: PredictRequest) => string)[] = [
    (r) => {
      const t = r.targets[this.int(r.targets.length)]!;
      const c = this.int(t.featureValues.length);
      t.featureValues[c] = Buffer.alloc(this.wrongLength(4));
      return 'target value length';
    },
    (r) => {
      const type = this.pick([
        [WireType.DATA_TYPE_FP64, 8],
        [WireType.DATA_TYPE_FP16, 2],
        [WireType.DATA_TYPE_INT64, 8],
        [WireType.DATA_TYPE_BOOL, 1],
        [WireType.DATA_TYPE_FP8E4M3, 1],
        [WireType.DATA_TYPE_UINT16, 2],
      ] as const);
      r.contextFeatures.push({
        name: 'extra',
        dataType: type[0],
        vectorDim: 0,
        value: Buffer.alloc(this.wrongLength(type[1])),
      });
      return 'context value length';
    },
    (r) => {
      const entry = r.targetInputSchema[this.int(r.targetInputSchema.length)]!;
      entry.dataType = this.pick([0, 31, 77, 1000, -1, 2 ** 31 - 1]) as WireType;
      return `unknown data type ${entry.dataType}`;
    },
    (r) => {
      r.contextFeatures.push({
        name: 'extra',
        dataType: this.pick([0, 64, -5]) as WireType,
        vectorDim: 0,
        value: Buffer.alloc(4),
      });
      return 'unknown context data type';
    },
    (r) => {
      const entry = r.targetInputSchema[this.int(r.targetInputSchema.length)]!;
      entry.dataType = this.pick([
        WireType.DATA_TYPE_FP32_VECTOR,
        WireType.DATA_TYPE_FP64_VECTOR,
        WireType.DATA_TYPE_BOOL_VECTOR,
        WireType.DATA_TYPE_INT8_VECTOR,
      ]);
      entry.vectorDim = this.pick([1e9, 2 ** 31 - 1, 123_456_789]);
      return `vector_dim ${entry.vectorDim}`;
    },
    (r) => {
      r.targetInputSchema[this.int(r.targetInputSchema.length)]!.vectorDim = 3;
      return 'vector_dim on a scalar';
    },
    (r) => {
      const entry = r.targetInputSchema[this.int(r.targetInputSchema.length)]!;
      entry.dataType = WireType.DATA_TYPE_FP32_VECTOR;
      entry.vectorDim = -1 - this.int(1000);
      return 'negative vector_dim';
    },
    (r) => {
      r.targets = [];
      return 'no targets';
    },
    (r) => {
      r.modelConfigId = '';
      return 'empty model id';
    },
    (r) => {
      r.modelConfigId = this.pick(['nope', 'duo2', 'DUO', ' duo', 'x'.repeat(300), 'models/duo', 'ünïcode']);
      return `unknown model ${r.modelConfigId.slice(0, 20)}`;
    },
    (r) => {
      const name = this.pick(['price', 'quality', 'item_id', 'p']);
      r.contextFeatures.push({ name, dataType: WireType.DATA_TYPE_FP32, vectorDim: 0, value: fp32(1) });
      return `duplicate name ${name} (context)`;
    },
    (r) => {
      r.targetInputSchema[1]!.name = this.pick(['price', 'item_id', 'p']);
      return `duplicate name ${r.targetInputSchema[1]!.name} (target schema)`;
    },
    (r) => {
      r.targetInputSchema[this.int(2)]!.name = '';
      return 'empty schema name';
    },
    (r) => {
      const t = r.targets[this.int(r.targets.length)]!;
      t.featureValues = this.pick([[], [fp32(1)], [fp32(1), fp32(2), fp32(3)]]);
      return `${t.featureValues.length} feature_values for 2 schema entries`;
    },
    (r) => {
      r.targetInputSchema = [r.targetInputSchema[0]!];
      for (const t of r.targets) t.featureValues = [t.featureValues[0]!];
      return 'missing request feature quality';
    },
    (r) => {
      r.contextFeatures.push({
        name: 'extra',
        dataType: WireType.DATA_TYPE_STRING_VECTOR,
        vectorDim: this.pick([0, 2]),
        value: Buffer.from([0xff, 0xff, 0, 0, 65]),
      });
      return 'malformed STRING_VECTOR';
    },
    (r) => {
      r.contextFeatures.push({
        name: 'extra',
        dataType: WireType.DATA_TYPE_BOOL_VECTOR,
        vectorDim: 9 + this.int(7),
        value: Buffer.alloc(1),
      });
      return 'BOOL_VECTOR too short';
    },
  ];

  /** Large messages (up to ~0.5 MB): drawn for about 0.5% of the requests. */
  private readonly expensive: ((r: PredictRequest) => string)[] = [
    (r) => {
      r.targets = MANY_TARGETS;
      return '200,000 targets';
    },
    (r) => {
      const t = r.targets[this.int(r.targets.length)]!;
      t.featureValues = MANY_VALUES;
      return '50,000 feature_values';
    },
    (r) => {
      r.targetInputSchema = Array.from({ length: 10_001 }, (_, i) => ({
        name: `f${i}`,
        dataType: WireType.DATA_TYPE_BOOL,
        vectorDim: 0,
      }));
      return '10,001 schema entries';
    },
  ];

  private readonly pair: ((r: PredictRequest) => string)[] = [
    (r) => {
      const p = r.pairs[this.int(r.pairs.length)]!;
      const bad = this.pick([r.targets.length, r.targets.length + 7, -1, -(2 ** 31), 2 ** 31 - 1]);
      if (this.next() < 0.5) p.firstTargetIndex = bad;
      else p.secondTargetIndex = bad;
      return `pair index ${bad}`;
    },
    (r) => {
      r.pairs = [];
      return 'no pairs';
    },
    (r) => {
      r.pairs[this.int(r.pairs.length)]!.featureValues = [Buffer.alloc(this.wrongLength(4))];
      return 'pair value length';
    },
    (r) => {
      r.pairInputSchema.push({ name: 'weight', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 });
      for (const p of r.pairs) p.featureValues.push(fp32(1));
      return 'duplicate pair schema name';
    },
    (r) => {
      r.pairInputSchema = [];
      for (const p of r.pairs) p.featureValues = [];
      return 'missing request feature weight';
    },
  ];

  private readonly slate: ((r: PredictRequest) => string)[] = [
    (r) => {
      const s = r.slates[this.int(r.slates.length)]!;
      const bad = this.pick([r.targets.length, r.targets.length + 3, -1, -(2 ** 31), 2 ** 31 - 1]);
      s.slateTargetIndices[this.int(s.slateTargetIndices.length)] = bad;
      return `slate index ${bad}`;
    },
    (r) => {
      r.slates[this.int(r.slates.length)]!.slateTargetIndices = [];
      return 'empty slate';
    },
    (r) => {
      r.slates = [];
      return 'no slates';
    },
    (r) => {
      r.slates[0]!.slateTargetIndices = Array.from({ length: 10_001 }, () => 0);
      return '10,001 targets in a slate';
    },
    (r) => {
      r.slates[this.int(r.slates.length)]!.featureValues = this.pick([[], [fp32(1), fp32(2)]]);
      return 'slate feature_values count';
    },
    (r) => {
      r.slateInputSchema[0]!.dataType = this.pick([0, 99]) as WireType;
      return 'unknown slate data type';
    },
  ];

  /** A corrupted request and what was done to it. */
  corrupt(): { method: Method; request: PredictRequest; summary: string } {
    const method = this.pick(['inferPointWise', 'inferPairWise', 'inferSlateWise'] as const);
    const request = this.valid(method);
    const own = method === 'inferPairWise' ? this.pair : method === 'inferSlateWise' ? this.slate : [];
    const pool = [...this.common, ...own];
    // One corruption, sometimes a second that only adds an invalid context feature, so it cannot
    // repair the first.
    const first = this.next() < 0.005 ? this.pick(this.expensive) : this.pick(pool);
    const names = [first(request)];
    if (this.next() < 0.2) names.push(this.common[this.pick(ADDITIVE)]!(request));
    return { method, request, summary: `${method} ${names.join(' + ')}` };
  }
}

describe('lattice orchestrator under fuzzed requests', () => {
  let servers: ReferenceServers;
  let proc: OrchestratorProcess;
  let raw: PredictClient;

  before(async () => {
    servers = await startReferenceServers({ prepareModels: writeDuoModel });
    await servers.config.put(`models/${DUO_ID}`, duoConfig(servers.targets.modelServer));
    proc = await startOrchestratorProcess({
      configDir: servers.configDir,
      featureStoreTarget: servers.targets.featureStore,
      nice: NICE,
    });
    raw = new PredictClient(proc.address, credentials.createInsecure(), {
      'grpc.max_send_message_length': 8 * 1024 * 1024,
    });
  });
  after(async () => {
    raw?.close();
    const exitCode = await proc?.stop();
    await servers?.stop();
    assert.equal(exitCode, 0, `lattice orchestrator exit code; its output:\n${proc?.output()}`);
  });

  test(`${REQUESTS} corrupted requests: each INVALID_ARGUMENT or NOT_FOUND; the process keeps serving`, async () => {
    const corruptor = new Corruptor(20240611);
    const unexpected: string[] = [];
    const counts = new Map<string, number>();
    let sent = 0;
    const call = (method: Method, request: PredictRequest) =>
      new Promise<PredictResponse>((resolve, reject) =>
        raw[method](request, new Metadata(), { deadline: Date.now() + 20_000 }, (err, res) =>
          err ? reject(err) : resolve(res),
        ),
      );
    const worker = async () => {
      while (sent < REQUESTS) {
        sent++;
        const { method, request, summary } = corruptor.corrupt();
        try {
          await call(method, request);
          unexpected.push(`OK: ${summary}`);
        } catch (err) {
          const { code, details } = err as ServiceError;
          counts.set(status[code], (counts.get(status[code]) ?? 0) + 1);
          if (code !== status.INVALID_ARGUMENT && code !== status.NOT_FOUND)
            unexpected.push(`${status[code]} (${details}): ${summary}`);
          else if (!details) unexpected.push(`${status[code]} without a message: ${summary}`);
        }
      }
    };
    const started = Date.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    console.log(
      `# ${REQUESTS} fuzzed requests in ${Date.now() - started} ms: ${JSON.stringify([...counts])}`,
    );
    assert.deepEqual(unexpected.slice(0, 8), [], `${unexpected.length} requests got another answer`);

    assert.equal(proc.exited(), undefined, 'the process is alive');
    const client = new OrchestratorClient(proc.address);
    try {
      const { targets, pairs } = await client.pairWise({
        modelConfigId: DUO_ID,
        targets: [
          { id: 'a', features: { price: 1, quality: 0.5 } },
          { id: 'b', features: { price: -1, quality: 2 } },
        ],
        pairs: [{ first: 1, second: 0, features: { weight: 0.5 } }],
        schema: { price: 'FP32', quality: 'FP32', weight: 'FP32' },
        returnTargetScores: true,
        deadlineMs: 5000,
      });
      assert.ok(Math.abs((targets[0]!.values.p as number) - duoScore(1, 0.5)) < 1e-6);
      assert.ok(Math.abs((pairs[0]!.values.slate_score as number) - (5 + duoScore(-1, 2))) < 1e-5);
    } finally {
      client.close();
    }
    const health = await fetch(`${proc.opsUrl}/healthz`);
    assert.equal(health.status, 200);
  });
});
