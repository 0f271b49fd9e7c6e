import { checkValueLength, convertValue, formatValue } from '../datatypes/index.js';
import type { DecodedResult, Query, Result, Row } from '../gen/retrieve/retrieve.js';
import { isLatticeError } from '../platform/errors.js';
import type { CounterMetric, Metrics } from '../platform/metrics/index.js';
import { decodeGroup } from './group-codec.js';
import { type PlannedColumn, type PlanOptions, planQuery, type QueryPlan } from './query-plan.js';
import type { FeatureRegistry } from './registry.js';
import { type FeatureStore, rowKey } from './store.js';

/** A Buffer view of value bytes (no copy): the generated messages type bytes fields as Buffer. */
const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export interface FeatureRetrieverOptions extends PlanOptions {
  /**
   * Answer a key the store does not have with the registry defaults of the requested features (as the
   * original online feature store does) instead of an empty `columns` list.
   */
  fillDefaults?: boolean;
  metrics?: Metrics;
  /** Told about stored values that cannot be read (corrupt, or written under another type); they are served as defaults. */
  onUnreadableValue?: (problem: string) => void;
}

/**
 * The semantics of `retrieve.FeatureService`, without the transport: one row per requested key in
 * request order (duplicates answered once per occurrence, read once), columns aligned with the
 * requested features (see `planQuery`).
 *
 * A key is *found* when at least one requested group is stored for it; its row holds a value for
 * every requested feature, a feature missing from what is stored taking its registry default. A key
 * that is not found gets a row with its key and an EMPTY `columns` list, which clients treat as
 * "not found"; with `fillDefaults` it gets the defaults instead.
 */
export class FeatureRetriever {
  readonly #registry: () => FeatureRegistry;
  readonly #store: FeatureStore;
  readonly #options: FeatureRetrieverOptions;
  readonly #keysCounter: CounterMetric | undefined;

  /** `registry` may be a function giving the registry now served, when entities can be added live. */
  constructor(
    registry: FeatureRegistry | (() => FeatureRegistry),
    store: FeatureStore,
    options: FeatureRetrieverOptions = {},
  ) {
    this.#registry = typeof registry === 'function' ? registry : () => registry;
    this.#store = store;
    this.#options = options;
    this.#keysCounter = options.metrics?.counter(
      'featurestore_keys_total',
      'Keys looked up by RetrieveFeatures / RetrieveDecodedResult, by entity and whether they were found',
      ['entity', 'outcome'],
    );
  }

  async retrieve(query: Query): Promise<Result> {
    const plan = planQuery(this.#registry(), query, this.#options);
    const cells = await this.#lookup(plan);
    const rows: Row[] = query.keys.map((key, k) => ({ keys: key.cols, columns: cells[k] ?? [] }));
    return {
      entityLabel: query.entityLabel,
      keysSchema: query.keysSchema,
      featureSchemas: plan.featureSchemas,
      rows,
    };
  }

  async retrieveDecoded(query: Query): Promise<DecodedResult> {
    const plan = planQuery(this.#registry(), query, this.#options);
    const cells = await this.#lookup(plan);
    const rendered = new Map<Buffer[], string[]>();
    const rows = query.keys.map((key, k) => {
      const values = cells[k];
      if (values === undefined) return { keys: key.cols, columns: [] };
      let columns = rendered.get(values);
      if (columns === undefined) {
        columns = values.map((bytes, c) => {
          const column = plan.columns[c]!;
          return formatValue(column.outputType, bytes, column.feature.vectorDim, `column ${c}`);
        });
        rendered.set(values, columns);
      }
      return { keys: key.cols, columns };
    });
    return { keysSchema: query.keysSchema, featureSchemas: plan.featureSchemas, rows };
  }

  /**
   * Reads each distinct key once and returns, per requested key, its column values (the same array
   * for repeated keys) or `undefined` when it is not found and defaults are not filled.
   */
  async #lookup(plan: QueryPlan): Promise<(Buffer[] | undefined)[]> {
    const { entity } = plan;
    const slotOf = new Map<string, number>();
    const distinct: (readonly string[])[] = [];
    const slots = plan.keys.map((key) => {
      const id = rowKey(entity.name, key);
      let slot = slotOf.get(id);
      if (slot === undefined) {
        slot = distinct.push(key) - 1;
        slotOf.set(id, slot);
      }
      return slot;
    });
    const stored = distinct.length === 0 ? [] : await this.#store.read(entity.name, distinct, plan.groups);
    let defaults: Buffer[] | undefined;
    let found = 0;
    const answers = stored.map((blobs, d) => {
      if (blobs.every((blob) => blob === undefined)) {
        if (!this.#options.fillDefaults) return undefined;
        defaults ??= plan.columns.map((column) => asBuffer(this.#cell(column, undefined, '')));
        return defaults;
      }
      found++;
      const key = distinct[d]!;
      const groups = blobs.map((blob, g) => this.#decodeGroup(plan, g, blob, key));
      return plan.columns.map((column) =>
        asBuffer(this.#cell(column, groups[column.groupSlot], key.join('|'))),
      );
    });
    this.#keysCounter?.inc({ entity: entity.name, outcome: 'found' }, found);
    this.#keysCounter?.inc({ entity: entity.name, outcome: 'not_found' }, distinct.length - found);
    return slots.map((slot) => answers[slot]);
  }

  #decodeGroup(
    plan: QueryPlan,
    slot: number,
    blob: Uint8Array | undefined,
    key: readonly string[],
  ): (Uint8Array | undefined)[] | undefined {
    if (blob === undefined) return undefined;
    const group = plan.entity.groupsByName.get(plan.groups[slot]!)!;
    const what = `${plan.entity.name}/${group.name} for key ${key.join('|')}`;
    try {
      return decodeGroup(blob, group.features.length, what);
    } catch (err) {
      if (!isLatticeError(err)) throw err;
      this.#options.onUnreadableValue?.(err.message);
      return undefined;
    }
  }

  /** The value served for one column: the stored bytes if they fit the feature's type, else its default. */
  #cell(column: PlannedColumn, values: (Uint8Array | undefined)[] | undefined, key: string): Uint8Array {
    const { feature } = column;
    let bytes = values?.[feature.index];
    if (bytes !== undefined) {
      try {
        checkValueLength(feature.dataType, feature.vectorDim, bytes, feature.name);
      } catch (err) {
        if (!isLatticeError(err)) throw err;
        this.#options.onUnreadableValue?.(`stored value of ${feature.name} for key ${key}: ${err.message}`);
        bytes = undefined;
      }
    }
    bytes ??= feature.defaultValue;
    if (column.outputType === feature.dataType) return bytes;
    return convertValue(bytes, feature.dataType, column.outputType, feature.vectorDim, {
      field: feature.name,
    });
  }
}
