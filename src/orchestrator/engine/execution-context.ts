import type { ModelSnapshot } from '../config/index.js';
import type { ComponentMatrix, SlateData } from '../matrix/component-matrix.js';

/** What every component of one request sees: the snapshot it runs on and the matrices it fills. */
export interface ExecutionContext {
  readonly snapshot: ModelSnapshot<ExecutionContext>;
  /** One row per target. */
  readonly matrix: ComponentMatrix;
  /** One row per pair or slate, for pair-wise and slate-wise requests. */
  readonly slate: SlateData | undefined;
  /** Which API pattern the request came through. */
  readonly pattern: InferencePattern;
  readonly trackingId: string;
  /** Epoch milliseconds by which the request must answer; Infinity when the caller set none. */
  readonly deadline: number;
}

export type InferencePattern = 'point' | 'pair' | 'slate' | 'legacy';
