/**
 * The rows of a Predict request as FeatureInit reads them: targets, pairs and slates with their
 * per-row feature values. A large request is decoded straight into columns (wire/request-columns.ts:
 * offsets into the request bytes, no object per row or value), a small one (and every caller of the
 * engine that builds a PredictRequest itself) is read through the generated messages; FeatureInit
 * sees both through these interfaces.
 */
import type { PredictRequest, Target, TargetPair, TargetSlate } from '../../gen/orchestrator/v1/predict.js';

/** Rows of a repeated field, each with a list of feature values (aligned with its schema). */
export interface ValueRows {
  readonly count: number;
  valueCount(row: number): number;
  valueLength(row: number, column: number): number;
  /** The value's bytes (a view). */
  value(row: number, column: number): Uint8Array;
  /** Where the value lies: `source(row)` bytes `[valueFrom, valueFrom + valueLength)`. */
  valueSource(row: number, column: number): Uint8Array;
  valueFrom(row: number, column: number): number;
}

export interface TargetRows extends ValueRows {
  id(row: number): string;
}

export interface PairRows extends ValueRows {
  first(row: number): number;
  second(row: number): number;
}

export interface SlateRows extends ValueRows {
  /** The slate's target indices (a view; do not keep it past the request). */
  indices(row: number): Int32Array | readonly number[];
}

export interface PredictRows {
  targets: TargetRows;
  pairs: PairRows;
  slates: SlateRows;
}

/**
 * A PredictRequest whose targets, pairs and slates were decoded into `rows` (its own `targets`,
 * `pairs` and `slates` stay empty).
 */
export type ColumnarPredictRequest = PredictRequest & { rows: PredictRows };

class MessageRows<R extends { featureValues: Uint8Array[] }> implements ValueRows {
  constructor(readonly messages: readonly R[]) {}
  get count(): number {
    return this.messages.length;
  }
  valueCount(row: number): number {
    return this.messages[row]!.featureValues.length;
  }
  valueLength(row: number, column: number): number {
    return this.messages[row]!.featureValues[column]!.length;
  }
  value(row: number, column: number): Uint8Array {
    return this.messages[row]!.featureValues[column]!;
  }
  valueSource(row: number, column: number): Uint8Array {
    return this.messages[row]!.featureValues[column]!;
  }
  valueFrom(): number {
    return 0;
  }
}

class TargetMessages extends MessageRows<Target> implements TargetRows {
  id(row: number): string {
    return this.messages[row]!.id;
  }
}

class PairMessages extends MessageRows<TargetPair> implements PairRows {
  first(row: number): number {
    return this.messages[row]!.firstTargetIndex;
  }
  second(row: number): number {
    return this.messages[row]!.secondTargetIndex;
  }
}

class SlateMessages extends MessageRows<TargetSlate> implements SlateRows {
  indices(row: number): readonly number[] {
    return this.messages[row]!.slateTargetIndices;
  }
}

/** The request's rows: its columns when it was decoded into them, else views of its messages. */
export function predictRows(request: PredictRequest | ColumnarPredictRequest): PredictRows {
  if ('rows' in request) return request.rows;
  return {
    targets: new TargetMessages(request.targets),
    pairs: new PairMessages(request.pairs),
    slates: new SlateMessages(request.slates),
  };
}
