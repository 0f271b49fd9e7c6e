/**
 * Dynamic batching: requests for the same model version that arrive within a short window are
 * stacked along the first dimension, run as one session call, and each gets its own rows back.
 *
 * Trade-offs. onnxruntime-node runs a session synchronously on the event loop (inside a
 * setImmediate), so every run costs fixed overhead (tensor creation, the native call, output
 * arrays) besides the math; stacking N small requests pays it once, which raises throughput under
 * concurrent load. The price: the first request of a batch waits up to `windowMs` even when no
 * other arrives (latency at low load), inputs are copied once into the stacked tensor, and a
 * failing run fails every request in the batch. Requests are validated before they join, so one bad
 * request never poisons the others; requests whose non-batch dimensions differ go to separate
 * batches. Off by default. Measured (bench/RESULTS.md, model-serving): one-row requests with 32 in
 * flight gained about 1.5× throughput and half the p50; 256-row requests gained nothing.
 */
import { LatticeError } from '../platform/errors.js';
import type { PreparedInfer } from './infer-request.js';
import type { LoadedModel, TensorValue } from './loaded-model.js';
import { allocate, copyElements, elementCount, sliceElements } from './tensor-codec.js';

export interface BatchingOptions {
  /** How long the first request of a batch waits for company, in ms. */
  windowMs: number;
  /** A batch runs as soon as it holds this many rows (a larger single request runs alone). */
  maxRows: number;
}

interface Entry {
  readonly prepared: PreparedInfer;
  readonly rows: number;
  readonly signal: AbortSignal | undefined;
  /** Ends the entry's hold on its model version (taken on submit, so a reload cannot close it). */
  readonly done: () => void;
  readonly resolve: (outputs: Map<string, TensorValue>) => void;
  readonly reject: (err: unknown) => void;
}

interface OpenBatch {
  readonly entries: Entry[];
  rows: number;
  timer: NodeJS.Timeout | undefined;
}

export class Batcher {
  /** Open batches per model version, then per batch key (the non-batch dimensions). */
  private readonly open = new Map<LoadedModel, Map<string, OpenBatch>>();
  /** Session runs the batcher made and requests it served, for metrics and tests. */
  readonly stats = { runs: 0, requests: 0 };

  constructor(private readonly options: BatchingOptions) {}

  /** Requests waiting for their batch to run. */
  pending(): number {
    let count = 0;
    for (const batches of this.open.values())
      for (const batch of batches.values()) count += batch.entries.length;
    return count;
  }

  /** Queues a validated request of a batchable model; resolves to its outputs (all the model fetched). */
  submit(prepared: PreparedInfer, signal?: AbortSignal): Promise<Map<string, TensorValue>> {
    const { model, batchKey } = prepared;
    const rows = prepared.rows ?? 0;
    const limit = Math.min(
      this.options.maxRows,
      model.config.maxBatchSize > 0 ? model.config.maxBatchSize : Number.POSITIVE_INFINITY,
    );
    return new Promise((resolve, reject) => {
      let batches = this.open.get(model);
      if (!batches) {
        batches = new Map();
        this.open.set(model, batches);
      }
      let batch = batches.get(batchKey);
      if (batch && batch.rows + rows > limit) {
        this.close(model, batchKey, batch);
        batch = undefined;
      }
      if (!batch) {
        const created: OpenBatch = { entries: [], rows: 0, timer: undefined };
        created.timer = setTimeout(() => this.close(model, batchKey, created), this.options.windowMs);
        batches.set(batchKey, created);
        batch = created;
      }
      batch.entries.push({ prepared, rows, signal, done: model.hold(), resolve, reject });
      batch.rows += rows;
      if (batch.rows >= limit) this.close(model, batchKey, batch);
    });
  }

  private close(model: LoadedModel, key: string, batch: OpenBatch): void {
    clearTimeout(batch.timer);
    const batches = this.open.get(model);
    if (batches?.get(key) === batch) {
      batches.delete(key);
      if (batches.size === 0) this.open.delete(model);
    }
    void this.run(model, batch.entries).finally(() => {
      for (const entry of batch.entries) entry.done();
    });
  }

  private async run(model: LoadedModel, all: readonly Entry[]): Promise<void> {
    // Callers that gave up while waiting do not take rows in the run.
    const entries = all.filter((entry) => {
      if (entry.signal?.aborted) entry.reject(entry.signal.reason);
      return !entry.signal?.aborted;
    });
    if (entries.length === 0) return;
    this.stats.runs++;
    this.stats.requests += entries.length;
    try {
      const outputs = this.outputsOf(model, entries);
      const results = await model.run(this.stack(model, entries), outputs);
      this.split(model, entries, results);
    } catch (err) {
      for (const entry of entries) entry.reject(err);
    }
  }

  /** The union of the outputs the entries asked for, in the model's order. */
  private outputsOf(model: LoadedModel, entries: readonly Entry[]): string[] {
    const wanted = new Set(entries.flatMap((entry) => entry.prepared.outputs.map((spec) => spec.name)));
    return model.outputs.filter((spec) => wanted.has(spec.name)).map((spec) => spec.name);
  }

  private stack(model: LoadedModel, entries: readonly Entry[]): Map<string, TensorValue> {
    if (entries.length === 1) return new Map(entries[0]!.prepared.inputs);
    const total = entries.reduce((sum, entry) => sum + entry.rows, 0);
    const stacked = new Map<string, TensorValue>();
    for (const spec of model.inputs) {
      const rowShape = entries[0]!.prepared.inputs.get(spec.name)!.shape.slice(1);
      const perRow = elementCount(rowShape);
      const data = allocate(spec.type, total * perRow);
      let row = 0;
      for (const entry of entries) {
        copyElements(data, entry.prepared.inputs.get(spec.name)!.data, row * perRow);
        row += entry.rows;
      }
      stacked.set(spec.name, { data, shape: [total, ...rowShape] });
    }
    return stacked;
  }

  private split(model: LoadedModel, entries: readonly Entry[], results: Map<string, TensorValue>): void {
    const total = entries.reduce((sum, entry) => sum + entry.rows, 0);
    for (const [name, value] of results) {
      if (value.shape[0] !== total) {
        throw new LatticeError(
          'INTERNAL',
          `model ${model.name} version ${model.version}: output "${name}" has ${value.shape[0]} rows for ${total} stacked input rows; turn batching off for this model`,
        );
      }
    }
    let row = 0;
    for (const entry of entries) {
      const mine = new Map<string, TensorValue>();
      for (const [name, value] of results) {
        const rowShape = value.shape.slice(1);
        const perRow = elementCount(rowShape);
        mine.set(name, {
          data: sliceElements(value.data, row * perRow, (row + entry.rows) * perRow),
          shape: [entry.rows, ...rowShape],
        });
      }
      row += entry.rows;
      entry.resolve(mine);
    }
  }
}
