/**
 * Which fields a Search filter may name: any attribute a point of the model carries (vss.md), that
 * is the membership flags `to_be_indexed_<variant>`, the entity's aggregator attributes (real-time
 * labels, known to the configuration repository from the aggregator table's columns, even before a
 * point carries them), and every payload field the served version's points carry: the training
 * data's attribute columns and the embedding events' payload fields, which live only in the vector
 * DB. Those are found by asking the vector DB for one point where the field EXISTS, through the port,
 * so the answer is the same for every adapter.
 *
 * A field found is remembered per collection for good (a version's points only gain fields that
 * matter here); a field not found is remembered for `negativeTtlMs`, so a storm of calls naming an
 * unknown field reaches the vector DB once per interval, not once per call. Anything else is
 * INVALID_ARGUMENT naming `<path>[i].field`.
 */
import { invalidArgument, isLatticeError } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import type { Filter } from '../../platform/vectordb/index.js';
import { collectionName } from '../model/collection-name.js';
import type { ClusterVectorDbs } from '../model/index.js';
import type { ServedVariant, ServingConfigRepository } from './config-repository.js';
import { quote } from './request-limits.js';
import type { VectorDbGuard } from './vector-db-guard.js';

export interface FilterFieldsDeps {
  config: ServingConfigRepository;
  vectorDbs: ClusterVectorDbs;
  guard: VectorDbGuard;
  /** How long a field no point carries is remembered, ms; default 2,000. */
  negativeTtlMs?: number;
}

/** The names an embedding event's payload may hold (embedding-event.ts): nothing else is looked for. */
const PAYLOAD_FIELD = /^[A-Za-z0-9_-]{1,128}$/;
/** Remembered fields and misses at most; past it the memory starts over (a storm of names stays bounded). */
const MAX_REMEMBERED = 10_000;

export class FilterFields {
  /** Per collection (and the vector DB it is on): payload fields some point carries. */
  private readonly carried = new Map<string, Set<string>>();
  private carriedCount = 0;
  /** `collection key \0 field` → when it may be looked for again. */
  private readonly missing = new Map<string, number>();
  private readonly negativeTtlMs: number;

  constructor(private readonly deps: FilterFieldsDeps) {
    this.negativeTtlMs = deps.negativeTtlMs ?? 2000;
  }

  /** INVALID_ARGUMENT naming `${path}[i].field` for the first filter on a field no point carries. */
  async check(
    served: ServedVariant,
    filters: readonly Filter[],
    path: string,
    context: CallContext,
  ): Promise<void> {
    for (const [i, filter] of filters.entries()) {
      if (await this.known(served, filter.field, context)) continue;
      throw invalidArgument(
        `${path}[${i}].field: unknown filter field ${quote(filter.field)}: no point of ${served.model.entity}/${served.model.modelName} version ${served.readVersion} carries it, and it is neither an aggregator attribute of the entity nor to_be_indexed_<variant> (filter fields: training-data attribute columns, embedding event payload fields, real-time labels, to_be_indexed_<variant>)`,
        `${path}[${i}].field`,
      );
    }
  }

  private async known(served: ServedVariant, field: string, context: CallContext): Promise<boolean> {
    const { variant, model } = served;
    const collection = collectionName(model.entity, model.modelName, served.readVersion);
    const key = `${variant.cluster}\u0000${variant.variant}\u0000${collection}`;
    if (this.carried.get(key)?.has(field)) return true;
    if (await this.deps.config.isFilterField(model, field)) return true;
    if (!PAYLOAD_FIELD.test(field)) return false;
    const missingKey = `${key}\u0000${field}`;
    const until = this.missing.get(missingKey);
    if (until !== undefined) {
      if (until > Date.now()) return false;
      this.missing.delete(missingKey);
    }
    const vectorDb = this.deps.vectorDbs.of(variant.cluster, variant.variant);
    // Any vector of the dimension will do: only whether a point matches matters.
    const probe = new Float32Array(model.config.vectorDimension);
    probe[0] = 1;
    let found: boolean;
    try {
      const [hits = []] = await this.deps.guard.run(
        () =>
          vectorDb.search({
            collection,
            queries: [{ vector: probe }],
            filters: [{ field, op: 'EXISTS', values: [] }],
            limit: 1,
          }),
        context.signal,
      );
      found = hits.length > 0;
    } catch (err) {
      // No collection: the page's own search answers FAILED_PRECONDITION for that.
      if (isLatticeError(err, 'NOT_FOUND') && err.field === 'collection') return true;
      throw err;
    }
    if (found) this.remember(key, field);
    else if (this.negativeTtlMs > 0) {
      if (this.missing.size >= MAX_REMEMBERED) this.missing.delete(this.missing.keys().next().value!);
      this.missing.set(missingKey, Date.now() + this.negativeTtlMs);
    }
    return found;
  }

  private remember(key: string, field: string): void {
    if (this.carriedCount >= MAX_REMEMBERED) {
      this.carried.clear();
      this.carriedCount = 0;
    }
    let fields = this.carried.get(key);
    if (fields === undefined) {
      fields = new Set();
      this.carried.set(key, fields);
    }
    fields.add(field);
    this.carriedCount++;
  }
}
