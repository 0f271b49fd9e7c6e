/**
 * Shadow traffic (orchestrator.md "Shadow configs"): a config whose `shadow` block names another
 * config has that share of its requests run again on the shadow, after the primary answered and off
 * its path, and the two answers compared (ranking-comparison.ts) into per-pair figures and metrics
 * (shadow-figures.ts). The caller only ever sees the primary's answer.
 *
 * Mirrored requests wait in one bounded queue and run `concurrency` at a time, and only in the
 * process's idle time: each starts, and goes on to each of its steps, only while no caller's request
 * runs (`idle`), so on a busy process they wait, and then drop, rather than slow callers down. A
 * request arriving at a full queue is dropped and counted, never waited for. Sampling is deterministic by tracking
 * id (a hash of it, so a replayed request is mirrored again or not again); a request without one
 * is sampled at random.
 */
import type { ModelSnapshot } from '../config/index.js';
import { ExecutionTimeline } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { InferenceRequest } from '../engine/feature-init.js';
import type { ExecuteOptions, InferenceResult, RequestMirror } from '../engine/inference-engine.js';
import { answerRanking } from './answer-ranking.js';
import { compareRankings, latencyDiffs } from './ranking-comparison.js';
import type { ShadowFigures } from './shadow-figures.js';

export interface ShadowMirrorOptions {
  /** The current snapshot of a config, or undefined when none is loaded under that id. */
  lookup(id: string): ModelSnapshot<ExecutionContext> | undefined;
  /** Runs a request on a snapshot (an engine's executeOn, with its own matrix budget). */
  run(
    snapshot: ModelSnapshot<ExecutionContext>,
    input: InferenceRequest,
    trackingId: string,
    options: ExecuteOptions,
  ): Promise<InferenceResult>;
  figures: ShadowFigures;
  /** Mirrored requests waiting for a free shadow slot; past it they are dropped (`queue_full`). */
  queueSize: number;
  /** Shadow executions at once. */
  concurrency: number;
  /** Each shadow execution's deadline, from when it starts. */
  deadlineMs: number;
  /**
   * While this returns a promise (callers' requests are running), a mirrored request neither starts
   * nor goes on to its next step (the engine's `callers.idle()`); none: it runs as soon as a slot frees.
   */
  idle?(): Promise<void> | undefined;
}

interface Job {
  primaryId: string;
  shadowId: string;
  k: number;
  input: InferenceRequest;
  primary: InferenceResult;
  timeline: ExecutionTimeline;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** FNV-1a of the tracking id, as a share in [0, 100). */
function share(trackingId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < trackingId.length; i++) {
    hash ^= trackingId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return ((hash >>> 0) % 10_000) / 100;
}

export class ShadowMirror implements RequestMirror {
  private readonly queue: Job[] = [];
  private running = 0;
  private waitingForIdle = false;

  constructor(private readonly options: ShadowMirrorOptions) {}

  wants(snapshot: ModelSnapshot<ExecutionContext>, trackingId: string): boolean {
    const shadow = snapshot.model.config.shadow;
    if (shadow === undefined || shadow.percentage <= 0) return false;
    if (shadow.percentage >= 100) return true;
    return (trackingId === '' ? Math.random() * 100 : share(trackingId)) < shadow.percentage;
  }

  send(input: InferenceRequest, primary: InferenceResult, timeline: ExecutionTimeline): void {
    const { config } = primary.context.snapshot.model;
    const shadow = config.shadow;
    if (shadow === undefined) return;
    const { figures } = this.options;
    const primaryId = config.model_config_id;
    const shadowId = shadow.model_config_id;
    figures.sampled(primaryId, shadowId);
    if (this.options.lookup(shadowId) === undefined) {
      figures.dropped(primaryId, shadowId, 'unknown_shadow');
      return;
    }
    // Free shadow slots take a job at once; past them, `queueSize` wait.
    const room = this.options.queueSize + Math.max(0, this.options.concurrency - this.running);
    if (this.queue.length >= room) {
      figures.dropped(primaryId, shadowId, 'queue_full');
      return;
    }
    this.queue.push({ primaryId, shadowId, k: shadow.k, input, primary, timeline });
    // Started on a later turn: nothing of the shadow runs before the caller's answer is on its way.
    setImmediate(() => this.pump());
  }

  /** Mirrored requests waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  private pump(): void {
    // Nothing to start (or already waiting): no waiter is left with the gate.
    if (this.waitingForIdle || this.queue.length === 0 || this.running >= this.options.concurrency) return;
    const busy = this.options.idle?.();
    if (busy !== undefined) {
      // Callers first: the queue (bounded, dropping) holds the mirrored requests until none runs.
      this.waitingForIdle = true;
      void busy.then(() => {
        this.waitingForIdle = false;
        this.pump();
      });
      return;
    }
    while (this.running < this.options.concurrency && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.running++;
      void this.mirror(job).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async mirror(job: Job): Promise<void> {
    const { figures } = this.options;
    // Looked up again: the shadow may have been deleted while the job waited.
    const snapshot = this.options.lookup(job.shadowId);
    if (snapshot === undefined) {
      figures.dropped(job.primaryId, job.shadowId, 'unknown_shadow');
      return;
    }
    const timeline = new ExecutionTimeline();
    let shadow: InferenceResult;
    try {
      shadow = await this.options.run(snapshot, job.input, job.primary.context.trackingId, {
        deadline: Date.now() + this.options.deadlineMs,
        timeline,
        pause: this.options.idle,
      });
    } catch {
      figures.failed(job.primaryId, job.shadowId);
      return;
    }
    // Each step of the comparison on its own turn of the event loop: callers' requests run between.
    await nextTurn();
    const primaryRanking = answerRanking(job.primary.context);
    await nextTurn();
    const shadowRanking = answerRanking(shadow.context);
    await nextTurn();
    const ranks =
      primaryRanking === undefined || shadowRanking === undefined
        ? {
            overlapAtK: Number.NaN,
            kendallTau: Number.NaN,
            meanAbsDiff: Number.NaN,
            maxAbsDiff: Number.NaN,
            shared: 0,
          }
        : compareRankings(primaryRanking, shadowRanking, job.k);
    figures.compared(job.primaryId, job.shadowId, {
      ...ranks,
      latencyDiffMs: latencyDiffs(job.timeline, timeline),
    });
  }
}
