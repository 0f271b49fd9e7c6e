import { z } from 'zod';
import type { ConfigEvent, ConfigStore, ConfigWatch } from '../../platform/config-store/index.js';
import { assertKey } from '../../platform/config-store/index.js';
import { describeError, invalidArgument } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { CounterMetric, GaugeMetric, Metrics } from '../../platform/metrics/index.js';
import { type CompiledExpression, compileExpression, type Precision, parsePrecision } from '../index.js';

/** Config store prefix under which each compute_id has one document: `compute/<compute_id>`. */
export const EXPRESSIONS_PREFIX = 'compute/';

/**
 * An expression document, the numerix layout plus an optional precision default:
 * `{ "expression": "a b +", "data_type": "fp32" }`. Unknown fields are rejected so that a misspelt
 * `data_type` does not silently fall back to fp64.
 */
const expressionDocumentSchema = z
  .object({
    expression: z.string().min(1, 'must be a non-empty RPN expression'),
    data_type: z.string().optional(),
  })
  .strict();

export type ExpressionDocument = z.infer<typeof expressionDocumentSchema>;

/** One compiled version of a compute_id's expression; immutable, so a request can hold it safely. */
export interface ComputeExpression {
  readonly computeId: string;
  readonly expression: CompiledExpression;
  /** The document's `data_type`; a request's own `data_type` wins over it. */
  readonly precision: Precision | undefined;
  /** Config store revision the expression was compiled from. */
  readonly revision: number;
}

export interface ExpressionStatus {
  readonly computeId: string;
  /** Revision serving now; undefined when no valid version was ever loaded. */
  readonly revision: number | undefined;
  /** Why the latest change was rejected, while the previous version (if any) keeps serving. */
  readonly lastError: string | undefined;
}

/** The config key holding `computeId`'s expression; INVALID_ARGUMENT when the id cannot be a key. */
export function expressionKey(computeId: string, prefix = EXPRESSIONS_PREFIX): string {
  if (computeId === '') throw invalidArgument('compute_id must not be empty', 'compute_id');
  const key = `${prefix}${computeId}`;
  assertKey(key);
  return key;
}

/**
 * Validates an expression document and compiles its expression; INVALID_ARGUMENT naming the field
 * (or the offending token) otherwise. The registry runs it on every change; `lattice compute put`
 * runs it before storing.
 */
export function compileExpressionDocument(document: unknown): {
  expression: CompiledExpression;
  precision: Precision | undefined;
} {
  const parsed = expressionDocumentSchema.safeParse(document);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'document'}: ${issue.message}`,
    );
    throw invalidArgument(`invalid expression document: ${problems.join('; ')}`);
  }
  const { expression, data_type } = parsed.data;
  let precision: Precision | undefined;
  try {
    precision = data_type === undefined ? undefined : parsePrecision(data_type);
  } catch (err) {
    throw invalidArgument(`invalid expression document: data_type: ${describeError(err)}`, 'data_type');
  }
  return { expression: compileExpression(expression), precision };
}

export interface ExpressionRegistryOptions {
  store: ConfigStore;
  logger: Logger;
  metrics: Metrics;
  /** Config store prefix holding one document per compute_id; default `compute/`. */
  prefix?: string;
}

/**
 * The live map compute_id → compiled expression, loaded from the ConfigStore and kept current by its
 * watch. Each change is compiled once, then swapped in; an invalid expression or a malformed document
 * is logged and counted and the previous version keeps serving; a deleted document removes the id.
 */
export class ExpressionRegistry {
  private readonly expressions = new Map<string, ComputeExpression>();
  private readonly errors = new Map<string, string>();
  private readonly prefix: string;
  private readonly reloads: CounterMetric;
  private readonly serving: GaugeMetric;
  private watch: ConfigWatch | undefined;

  constructor(private readonly options: ExpressionRegistryOptions) {
    this.prefix = options.prefix ?? EXPRESSIONS_PREFIX;
    this.reloads = options.metrics.counter(
      'compute_expression_reloads_total',
      'Compute expression changes, by compute_id and outcome (applied, rejected, removed)',
      ['compute_id', 'outcome'],
    );
    this.serving = options.metrics.gauge('compute_expressions', 'Compute expressions serving now');
  }

  /** Loads every expression under the prefix and follows changes; resolves once all are loaded. */
  async start(): Promise<void> {
    if (this.watch) return;
    this.watch = await this.options.store.watch(this.prefix, (event) => this.apply(event), {
      initial: true,
      onError: (err) => this.options.logger.warn({ err }, 'compute expression watch: %s', err.message),
    });
    this.serving.set({}, this.expressions.size);
  }

  async stop(): Promise<void> {
    const watch = this.watch;
    this.watch = undefined;
    await watch?.close();
  }

  /** The expression serving `computeId` now, or undefined. */
  get(computeId: string): ComputeExpression | undefined {
    return this.expressions.get(computeId);
  }

  get size(): number {
    return this.expressions.size;
  }

  ids(): string[] {
    return [...this.expressions.keys()].sort();
  }

  /** Every known compute_id with the revision serving and the last rejected change, sorted by id. */
  status(): ExpressionStatus[] {
    const ids = new Set([...this.expressions.keys(), ...this.errors.keys()]);
    return [...ids].sort().map((computeId) => ({
      computeId,
      revision: this.expressions.get(computeId)?.revision,
      lastError: this.errors.get(computeId),
    }));
  }

  private apply(event: ConfigEvent): void {
    const computeId = event.key.slice(this.prefix.length);
    if (!event.key.startsWith(this.prefix) || computeId === '') return;
    if (event.type === 'delete') {
      const removed = this.expressions.delete(computeId);
      this.errors.delete(computeId);
      if (removed) {
        this.reloads.inc({ compute_id: computeId, outcome: 'removed' });
        this.serving.set({}, this.expressions.size);
        this.options.logger.info({ computeId, revision: event.revision }, 'compute expression removed');
      }
      return;
    }
    if (event.type === 'invalid') {
      this.reject(computeId, event.revision, event.reason);
      return;
    }
    let compiled: ReturnType<typeof compileExpressionDocument>;
    try {
      compiled = compileExpressionDocument(event.value);
    } catch (err) {
      this.reject(computeId, event.revision, describeError(err));
      return;
    }
    this.expressions.set(computeId, { computeId, revision: event.revision, ...compiled });
    this.errors.delete(computeId);
    this.reloads.inc({ compute_id: computeId, outcome: 'applied' });
    this.serving.set({}, this.expressions.size);
    this.options.logger.info(
      { computeId, revision: event.revision, expression: compiled.expression.source },
      'compute expression applied',
    );
  }

  private reject(computeId: string, revision: number, reason: string): void {
    this.errors.set(computeId, reason);
    this.reloads.inc({ compute_id: computeId, outcome: 'rejected' });
    const serving = this.expressions.get(computeId)?.revision;
    this.options.logger.error(
      { computeId, revision, serving },
      `compute expression ${computeId} rejected${serving === undefined ? '' : ` (revision ${serving} keeps serving)`}: ${reason}`,
    );
  }
}
