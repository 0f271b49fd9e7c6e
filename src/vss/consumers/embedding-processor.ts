/**
 * Applies batches of embedding events (for the ingestion handler): the embedding-store rows and
 * the points of each named variant's version, then the ingestion ledger (ingestion-repository.ts),
 * sent with the re-read of the aggregator rows that follows the point writes.
 *
 * What is written, per event (docs/vss.md, "What ingestion writes"):
 * - the embedding-store row (`model_name`, `version`, `id`, `embedding`, `search_embedding`, one
 *   `to_be_indexed_<variant>` column per variant of `variants_index_map` holding the raw flag, and
 *   an expiry when the model's embedding store is enabled with a TTL);
 * - one point per collection: the variants named in `variants_version_map` that live on one vector
 *   DB (their cluster's: model/cluster-vector-dbs.ts) share one collection per version there, so the
 *   point is written once per version and cluster (a variant being promoted also to production), with the payload
 *   (event payload first, then the aggregator row's attributes) and every variant's membership flag
 *   `to_be_indexed_<variant>` = raw index flag AND its vss_filter on those attributes.
 *
 * A batch becomes a few statements whatever its size: one multi-row write per store table and
 * version (answering with the rows' index flags when points need them), one aggregator read per
 * entity before the point writes and one after them (aggregator-recheck.ts), one index-flag read per
 * table and version only for payload-only events, one ledger write, and per collection one delete,
 * one upsert and the payload updates. Events of the same id fold into their
 * net effect first (embedding-plan.ts). Every write is an upsert or a delete by key, so applying a
 * batch twice has the effect of applying it once.
 */
import { describeError, isLatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { Payload, PointInput, StoredPoint, VectorDb } from '../../platform/vectordb/index.js';
import {
  ClusterVectorDbs,
  changedRows,
  collectionName,
  EXPIRES_AT_FIELD,
  embeddingTtlSeconds,
  membershipFlags,
  mergeAttributes,
  typedAttributes,
  variantCollections,
  withoutFlags,
} from '../model/index.js';
import type {
  Attributes,
  Cluster,
  IndexFlags,
  IngestedEvent,
  VectorDbType,
  VssStore,
} from '../store/index.js';
import { rewritesOf } from './aggregator-recheck.js';
import { CollectionProvisioner } from './collection-provisioner.js';
import type { EmbeddingEvent } from './embedding-event.js';
import {
  type PlannedEvent,
  type PointTarget,
  type PointWrites,
  planBatch,
  type StoreWrites,
  targetKey,
} from './embedding-plan.js';
import type { EventBatchHandler, EventOutcome } from './event-batch.js';
import type { CatalogModel, CatalogVariant } from './model-catalog.js';
import { ModelCatalog } from './model-catalog.js';

export interface EmbeddingProcessorOptions {
  store: VssStore;
  /** The experiment cluster's vector DB. */
  vectorDb: VectorDb;
  /** Vector DBs by cluster (production variants are written there); default `vectorDb` alone, as experiment. */
  vectorDbs?: ClusterVectorDbs;
  /**
   * The kind of `vectorDb`, as variants name it (`vectordb_type`). Experiment variants on another
   * kind live in another vector DB: their index flags are stored, and the admin fills their
   * collection from the embedding store; this processor writes no point for them. (The production
   * cluster has one vector DB, which holds every production variant whatever its kind.)
   */
  vectorDbType: VectorDbType;
  /** Shared with the EOF processor, so both see the same registrations. Default: a new one. */
  catalog?: ModelCatalog;
  logger?: Logger;
}

/** Rewrites of points whose aggregator row changed while they were written, before the batch is retried. */
const MAX_RECHECKS = 5;

/** How one event of the batch fared before the writes. */
type Verdict = { planned: PlannedEvent } | { rejected: string };

/**
 * Not an {@link EventBatchHandler} of its own: embedding events share the ingestion topic with EOF
 * markers, so the topic's one parse entry is the ingestion handler's (ingestion-message.ts), which
 * hands this processor the embedding runs of a batch.
 */
export class EmbeddingProcessor {
  readonly #store: VssStore;
  readonly #vectorDbs: ClusterVectorDbs;
  readonly #vectorDbType: VectorDbType;
  readonly #catalog: ModelCatalog;
  readonly #collections = new Map<Cluster, CollectionProvisioner>();
  readonly #logger: Logger | undefined;
  /** Variants on another vector DB already reported, so the log says it once per variant. */
  readonly #reportedElsewhere = new Set<string>();

  constructor(options: EmbeddingProcessorOptions) {
    this.#store = options.store;
    this.#vectorDbs = options.vectorDbs ?? ClusterVectorDbs.single(options.vectorDb);
    this.#vectorDbType = options.vectorDbType;
    this.#catalog = options.catalog ?? new ModelCatalog(options.store);
    this.#logger = options.logger;
  }

  #provisioner(cluster: Cluster): CollectionProvisioner {
    let provisioner = this.#collections.get(cluster);
    if (provisioner === undefined) {
      provisioner = new CollectionProvisioner(this.#vectorDbs.of(cluster));
      this.#collections.set(cluster, provisioner);
    }
    return provisioner;
  }

  async apply(events: readonly EmbeddingEvent[]): Promise<EventOutcome[]> {
    const since = this.#catalog.now();
    const verdicts: Verdict[] = [];
    // The events of a batch mostly name one model and the same variants: each model is looked up,
    // and each combination of variants judged, once per batch (this was a sixth of the bytes the
    // consumers allocated per event, which the garbage collector then spent time on).
    const models = new BatchMemo<CatalogModel | undefined>();
    const freshModels = new BatchMemo<CatalogModel | undefined>();
    const targets = new Map<CatalogModel, Judged>();
    for (const event of events) {
      const model = await models.get(event, () => this.#catalog.model(event));
      let verdict = this.#judge(event, model, targets);
      // Refused against a copy older than this batch: ask the store once more before refusing.
      if ('rejected' in verdict) {
        const fresh = await freshModels.get(event, () => this.#catalog.model(event, since));
        verdict = this.#judge(event, fresh, targets);
      }
      verdicts.push(verdict);
    }
    await this.#provisionCollections(verdicts);

    const planned = verdicts.flatMap((v) => ('planned' in v ? [v.planned] : []));
    const plan = planBatch(planned);
    const flagsNeeded = this.#rowFlagsNeeded(plan.collections);
    const written = new Map<string, IndexFlags>();
    // Taken before the rows are written (their expires_at is the store's now() + TTL then): a point
    // never outlives its row.
    const writtenAt = Date.now();
    const writeStores = async () => {
      for (const writes of plan.stores) {
        const key = storeKey(writes.model, writes.version);
        written.set(key, await this.#writeStore(writes, flagsNeeded.has(key)));
      }
    };
    // The rows and the first aggregator read do not depend on each other, so they go together: one
    // round trip less on the batch's path, which the partitions' batches wait on in turn (the read
    // after the point writes is what catches a concurrent real-time update, see below). Both settle
    // before a failure is thrown, so a retry of the batch never overlaps this attempt's row writes.
    const [stores, read] = await Promise.allSettled([writeStores(), this.#readAggregator(plan.collections)]);
    if (stores.status === 'rejected') throw stores.reason;
    if (read.status === 'rejected') throw read.reason;
    let attributes = read.value;
    for (const writes of plan.collections) await this.#writePoints(writes, attributes, written, writtenAt);
    // Rows and points are written: the ledger can say so. It goes out with the first re-read of the
    // aggregator rows (below), so both reach the database in one hop of the batch's path. Rewrites the
    // re-read may call for change payloads only, never what the ledger records; should they fail, the
    // batch is applied again and recorded again (the ledger keeps an event's last outcome).
    const [recorded, reread] = await Promise.allSettled([
      this.#recordLedger(events, verdicts),
      this.#readAggregator(plan.collections),
    ]);
    if (recorded.status === 'rejected') throw recorded.reason;
    if (reread.status === 'rejected') throw reread.reason;
    // A real-time update may have changed a row read above and found no point yet: see aggregator-recheck.ts.
    let now = reread.value;
    for (let round = 1; ; round++) {
      const changed = changedRows(attributes, now);
      if (changed.size === 0) break;
      if (round > MAX_RECHECKS)
        throw new Error('aggregator rows keep changing under this batch; retrying it');
      for (const writes of plan.collections) {
        const rewrites = rewritesOf(writes, changed);
        if (rewrites !== undefined) await this.#writePoints(rewrites, now, written, writtenAt);
      }
      attributes = now;
      now = await this.#readAggregator(plan.collections);
    }
    return verdicts.map((v) => ('rejected' in v ? v.rejected : undefined));
  }

  /** The batch's events and outcomes in the ingestion ledger, which EOF completion counts from. */
  #recordLedger(events: readonly EmbeddingEvent[], verdicts: readonly Verdict[]): Promise<void> {
    return this.#store.ingestion.recordEvents(
      events.map((event, i): IngestedEvent => {
        const verdict = verdicts[i]!;
        const rejected = 'rejected' in verdict;
        return {
          entity: event.entity,
          modelName: event.modelName,
          version: event.version,
          eventKey: event.eventKey,
          jobId: event.jobId,
          rejected,
          points: !rejected && event.operation === 'A' ? verdict.planned.collections.size : 0,
        };
      }),
    );
  }

  /**
   * Accepts the event against the model's registration, or says why it never can be applied. What
   * does not depend on the event's vectors is judged once per combination of variants (`memo`).
   */
  #judge(event: EmbeddingEvent, model: CatalogModel | undefined, memo: Map<CatalogModel, Judged>): Verdict {
    if (model === undefined) {
      return { rejected: `model ${event.entity}/${event.modelName} is not registered (field model_name)` };
    }
    const dimension = model.model.modelConfig.vectorDimension;
    for (const [vector, field] of VECTOR_FIELDS) {
      const values = event[vector];
      if (values !== undefined && values.length !== dimension) {
        return {
          rejected: `${field} has ${values.length} values, but model ${event.entity}/${event.modelName} has dimension ${dimension}`,
        };
      }
    }
    let judged = memo.get(model);
    if (judged === undefined) {
      judged = { last: undefined, byKey: new Map() };
      memo.set(model, judged);
    }
    let targets: Targets | undefined;
    // Most often the same variants as the event before: no key to build.
    if (judged.last !== undefined && sameVariants(event, judged.last.event)) targets = judged.last.targets;
    else {
      const key = variantsKey(event);
      targets = judged.byKey.get(key);
      if (targets === undefined) {
        targets = this.#targets(event, model);
        judged.byKey.set(key, targets);
      }
      judged.last = { event, targets };
    }
    return typeof targets === 'string'
      ? { rejected: targets }
      : { planned: { event, model, collections: targets } };
  }

  /** The collections the event's variants write, or why they cannot be written. */
  #targets(event: EmbeddingEvent, model: CatalogModel): Targets {
    const label = `${event.entity}/${event.modelName}`;
    for (const variant of event.indexFlags?.keys() ?? []) {
      if (!model.variants.has(variant)) {
        return `index_space.variants_index_map.${variant}: model ${label} has no variant ${variant}`;
      }
    }
    const collections = new Map<string, PointTarget>();
    for (const [name, version] of event.variantVersions) {
      const field = `index_space.variants_version_map.${name}`;
      const known = model.variants.get(name);
      if (known === undefined) return `${field}: model ${label} has no variant ${name}`;
      const { writeVersion, readVersion } = known.variant;
      if (version !== writeVersion && version !== readVersion) {
        return `${field}: variant ${name} writes version ${writeVersion ?? 'none'} and reads ${readVersion ?? 'none'}, not ${version} (reset the model to write a new version)`;
      }
      if (known.rule === undefined) {
        return `${field}: variant ${name} has an invalid vss_filter: ${known.ruleError}`;
      }
      const collection = collectionName(event.entity, event.modelName, version);
      for (const cluster of this.#clustersOf(known, model, version)) {
        collections.set(targetKey({ cluster, collection }), { cluster, collection, version });
      }
    }
    return collections;
  }

  /** The clusters holding the variant's points of `version` that this processor writes. */
  #clustersOf(known: CatalogVariant, model: CatalogModel, version: number): Cluster[] {
    const clusters: Cluster[] = [];
    for (const place of variantCollections(known.variant, model.promoting.get(known.variant.variant))) {
      if (place.version !== version || clusters.includes(place.cluster)) continue;
      if (this.#writesHere(known, place.cluster)) clusters.push(place.cluster);
    }
    return clusters;
  }

  /** Whether this processor writes the variant's points on `cluster` (else it says why, once). */
  #writesHere(known: CatalogVariant, cluster: Cluster): boolean {
    const { variant } = known;
    const production = cluster === 'production';
    if (production ? this.#vectorDbs.has('production') : variant.vectorDbType === this.#vectorDbType)
      return true;
    const key = `${variant.entity}/${variant.modelName}/${variant.variant}`;
    if (!this.#reportedElsewhere.has(`${key}/${cluster}`)) {
      this.#reportedElsewhere.add(`${key}/${cluster}`);
      this.#logger?.warn(
        { variant: key, vectorDbType: variant.vectorDbType, cluster },
        production
          ? `variant ${key} is in the production cluster and these consumers have no production vector database: its index flags are stored, its points are not written here (configure vss.clusters.production)`
          : `variant ${key} is on a ${variant.vectorDbType} vector database and these consumers write ${this.#vectorDbType}: its index flags are stored, and its collection is filled from the embedding store`,
      );
    }
    return false;
  }

  /** Creates missing collections; events writing a collection of the wrong shape are refused. */
  async #provisionCollections(verdicts: Verdict[]): Promise<void> {
    const refused = new Map<string, string | undefined>();
    for (const [i, verdict] of verdicts.entries()) {
      if (!('planned' in verdict) || verdict.planned.event.operation !== 'A') continue;
      const { model, collections } = verdict.planned;
      for (const [key, target] of collections) {
        if (!refused.has(key)) {
          refused.set(
            key,
            await this.#provisioner(target.cluster).ensure({
              name: target.collection,
              dimension: model.model.modelConfig.vectorDimension,
              distance: model.model.modelConfig.distanceFunction,
            }),
          );
        }
        const why = refused.get(key);
        if (why !== undefined) {
          verdicts[i] = { rejected: why };
          break;
        }
      }
    }
  }

  /**
   * The variants whose membership the points of a collection carry: those whose points of the
   * version live on the cluster (read or written there, or being promoted to it).
   */
  #pointVariants(model: CatalogModel, cluster: Cluster, version: number): CatalogVariant[] {
    return [...model.variants.values()].filter(
      (known) => known.rule !== undefined && this.#clustersOf(known, model, version).includes(cluster),
    );
  }

  /**
   * The store versions (storeKey) whose written rows' flags some point needs: a put whose events did
   * not name every variant's flag takes the others from its row.
   */
  #rowFlagsNeeded(collections: readonly PointWrites[]): Set<string> {
    const needed = new Set<string>();
    for (const writes of collections) {
      const variants = this.#pointVariants(writes.model, writes.cluster, writes.version);
      for (const put of writes.puts.values()) {
        if (variants.some((v) => put.indexFlags[v.variant.variant] === undefined)) {
          needed.add(storeKey(writes.model, put.storeVersion));
        }
      }
    }
    return needed;
  }

  /** Writes one model version's rows; with `returnFlags`, answers with the written rows' flags. */
  async #writeStore(writes: StoreWrites, returnFlags: boolean): Promise<IndexFlags> {
    const { model, version } = writes;
    const table = model.embeddingsTable;
    const modelName = model.model.modelName;
    const ttl = embeddingTtlSeconds(model.model);
    // Three idempotent steps rather than one transaction: a crash between them leaves what a
    // redelivery of the batch completes, and the store's column cache (shared outside transactions)
    // saves a catalog read per batch.
    const embeddings = this.#store.embeddings;
    if (writes.deletes.length > 0) {
      await embeddings.delete(table, { modelName, version, ids: writes.deletes });
    }
    // Payload-only events set flags on rows that exist (before the puts, which may follow them in
    // the batch): one statement per (variant, value).
    const byFlag = new Map<string, string[]>();
    for (const [id, flags] of writes.flagUpdates) {
      for (const [variant, flag] of Object.entries(flags)) {
        const key = JSON.stringify([variant, flag]);
        const ids = byFlag.get(key);
        if (ids === undefined) byFlag.set(key, [id]);
        else ids.push(id);
      }
    }
    for (const [key, ids] of byFlag) {
      const [variant, toBeIndexed] = JSON.parse(key) as [string, boolean];
      await embeddings.setMembership(table, { modelName, version, ids, variant, toBeIndexed });
    }
    if (writes.puts.length === 0) return new Map();
    const batch = { modelName, version, rows: writes.puts, ttlSeconds: ttl };
    if (!returnFlags) {
      await embeddings.upsert(table, batch);
      return new Map();
    }
    // Every variant whose points this processor writes: the points of any of its versions may need them.
    const variants = [...model.variants.values()]
      .filter(
        (known) =>
          known.rule !== undefined &&
          variantCollections(known.variant, model.promoting.get(known.variant.variant)).some((place) =>
            this.#writesHere(known, place.cluster),
          ),
      )
      .map(({ variant }) => variant.variant);
    return embeddings.upsertReturningFlags(table, batch, variants);
  }

  /** The aggregator rows of every id the batch writes a point for: one read per entity. */
  async #readAggregator(collections: readonly PointWrites[]): Promise<Map<string, Map<string, Attributes>>> {
    const idsByTable = new Map<string, Set<string>>();
    for (const writes of collections) {
      if (writes.puts.size === 0 && writes.payloads.size === 0) continue;
      const table = writes.model.aggregatorTable;
      let ids = idsByTable.get(table);
      if (ids === undefined) {
        ids = new Set();
        idsByTable.set(table, ids);
      }
      for (const id of writes.puts.keys()) ids.add(id);
      for (const id of writes.payloads.keys()) ids.add(id);
    }
    const rows = new Map<string, Map<string, Attributes>>();
    for (const [table, ids] of idsByTable)
      rows.set(table, await this.#store.aggregator.read(table, [...ids]));
    return rows;
  }

  async #writePoints(
    writes: PointWrites,
    aggregator: Map<string, Map<string, Attributes>>,
    written: ReadonlyMap<string, IndexFlags>,
    writtenAt: number,
  ): Promise<void> {
    const { collection, model } = writes;
    const ttlSeconds = embeddingTtlSeconds(model.model);
    const vectorDb = this.#vectorDbs.of(writes.cluster);
    // The variants searching or filling this version here: the ones an event may name, plus those
    // it leaves out, whose membership is kept (recomputed from their stored flags).
    const variants = this.#pointVariants(model, writes.cluster, writes.version);
    const rows = aggregator.get(model.aggregatorTable) ?? new Map<string, Attributes>();
    const stored = await this.#storedFlags(writes, variants, written);
    const existing = await this.#existingPayloads(vectorDb, writes);
    const flagged = variants.map(({ variant, rule }) => ({ name: variant.variant, rule: rule! }));

    /** Each variant's membership: its raw index flag (the store row's, else the events') AND its filter. */
    const withFlags = (
      id: string,
      attributes: Payload,
      sent: Record<string, boolean> | undefined,
      previous: Payload | undefined,
    ): Payload => membershipFlags(flagged, attributes, stored.get(id), sent, previous);

    if (writes.deletes.length > 0) await this.#delete(vectorDb, collection, writes.deletes);
    if (writes.puts.size > 0) {
      const points: PointInput[] = [];
      for (const [id, put] of writes.puts) {
        // The attributes (a fresh object), then the flags computed from them.
        const payload = mergeAttributes(put.payload, rows.get(id));
        Object.assign(payload, withFlags(id, payload, put.indexFlags, undefined));
        if (ttlSeconds > 0) payload[EXPIRES_AT_FIELD] = writtenAt + ttlSeconds * 1000;
        points.push({ id, vector: put.vector, payload });
      }
      await this.#write(writes, () => vectorDb.upsert(collection, points));
    }
    // Payload updates merge into each point; points with the same update share one call.
    const updates = new Map<string, { payload: Payload; ids: string[] }>();
    for (const [id, update] of writes.payloads) {
      const previous = existing.get(id);
      if (previous === undefined) continue; // no point to update (setPayload would ignore it too)
      const earlier = withoutFlags(previous);
      const attributes = mergeAttributes({ ...earlier, ...update.payload }, rows.get(id));
      const payload = {
        ...typedAttributes(update.payload),
        ...withFlags(id, attributes, update.indexFlags, previous),
      };
      const key = JSON.stringify(payload);
      const group = updates.get(key);
      if (group === undefined) updates.set(key, { payload, ids: [id] });
      else group.ids.push(id);
    }
    for (const { payload, ids } of updates.values()) {
      await this.#write(writes, () => vectorDb.setPayload(collection, ids, payload));
    }
  }

  /**
   * Raw index flags from the store rows the points' events wrote: as the batch's row writes
   * answered them, else read (one read per store version: payload-only events).
   */
  async #storedFlags(
    writes: PointWrites,
    variants: readonly CatalogVariant[],
    written: ReadonlyMap<string, IndexFlags>,
  ): Promise<Map<string, Record<string, boolean>>> {
    const flags = new Map<string, Record<string, boolean>>();
    if (variants.length === 0) return flags;
    const idsByVersion = new Map<number, string[]>();
    const add = (id: string, version: number) => {
      const ids = idsByVersion.get(version);
      if (ids === undefined) idsByVersion.set(version, [id]);
      else ids.push(id);
    };
    // A put whose events named every variant's flag knows the row's flags: no need to read them.
    for (const [id, put] of writes.puts) {
      if (variants.every((v) => put.indexFlags[v.variant.variant] !== undefined)) continue;
      const row = written.get(storeKey(writes.model, put.storeVersion))?.get(id);
      if (row !== undefined) flags.set(id, row);
      else add(id, put.storeVersion);
    }
    for (const [id, update] of writes.payloads) add(id, update.storeVersion);
    for (const [version, ids] of idsByVersion) {
      const read = await this.#store.embeddings.indexFlags(writes.model.embeddingsTable, {
        modelName: writes.model.model.modelName,
        version,
        ids,
        variants: variants.map((v) => v.variant.variant),
      });
      for (const [id, row] of read) flags.set(id, row);
    }
    return flags;
  }

  /** The current payloads of the points a payload update touches. */
  async #existingPayloads(vectorDb: VectorDb, writes: PointWrites): Promise<Map<string, Payload>> {
    const found = new Map<string, Payload>();
    if (writes.payloads.size === 0) return found;
    const ids = [...writes.payloads.keys()];
    let points: (StoredPoint | undefined)[];
    try {
      points = await vectorDb.getPoints(writes.collection, ids, {
        withVector: false,
        withPayload: true,
      });
    } catch (err) {
      if (isLatticeError(err, 'NOT_FOUND')) return found; // no collection yet: no points to update
      throw err;
    }
    for (const point of points) if (point !== undefined) found.set(point.id, point.payload ?? {});
    return found;
  }

  /** Deletes points; a collection that does not exist holds none of them. */
  async #delete(vectorDb: VectorDb, collection: string, ids: readonly string[]): Promise<void> {
    try {
      await vectorDb.delete(collection, ids);
    } catch (err) {
      if (!isLatticeError(err, 'NOT_FOUND')) throw err;
    }
  }

  /** A vector DB write; a collection dropped since it was provisioned is provisioned again on retry. */
  async #write<T>(writes: PointWrites, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (isLatticeError(err, 'NOT_FOUND')) {
        this.#provisioner(writes.cluster).forget(writes.collection);
        throw new Error(`collection ${writes.collection} is gone: ${describeError(err)}`, { cause: err });
      }
      throw err;
    }
  }
}

/** The collections an event writes (by targetKey), or why it cannot be applied. */
type Targets = ReadonlyMap<string, PointTarget> | string;

const VECTOR_FIELDS = [
  ['embedding', 'index_space.embedding'],
  ['searchEmbedding', 'search_space.embedding'],
] as const;

/** The targets judged for one model in a batch: by {@link variantsKey}, and the last event's. */
interface Judged {
  last: { event: EmbeddingEvent; targets: Targets } | undefined;
  readonly byKey: Map<string, Targets>;
}

/** Whether two events name the same variants, versions and index flags, in the same order. */
function sameVariants(a: EmbeddingEvent, b: EmbeddingEvent): boolean {
  return sameEntries(a.variantVersions, b.variantVersions) && sameKeys(a.indexFlags, b.indexFlags);
}

function sameEntries(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  if (a === b) return true; // events decoded from the same text share their maps
  if (a.size !== b.size) return false;
  const other = b.entries();
  for (const [name, version] of a) {
    const [otherName, otherVersion] = other.next().value!;
    if (name !== otherName || version !== otherVersion) return false;
  }
  return true;
}

function sameKeys(a: ReadonlyMap<string, boolean> | undefined, b: ReadonlyMap<string, boolean> | undefined) {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (a.size !== b.size) return false;
  const other = b.keys();
  for (const name of a.keys()) if (name !== other.next().value) return false;
  return true;
}

/** What decides an event's targets besides its model: the variants it names, with versions. */
function variantsKey(event: EmbeddingEvent): string {
  let key = '';
  for (const [name, version] of event.variantVersions) key += `${name}=${version},`;
  key += '|';
  for (const name of event.indexFlags?.keys() ?? []) key += `${name},`;
  return key;
}

/** One lookup per model within a batch (by entity, then model name). */
class BatchMemo<T> {
  readonly #byEntity = new Map<string, Map<string, Promise<T>>>();

  get(key: { entity: string; modelName: string }, load: () => Promise<T>): Promise<T> {
    let byModel = this.#byEntity.get(key.entity);
    if (byModel === undefined) {
      byModel = new Map();
      this.#byEntity.set(key.entity, byModel);
    }
    let found = byModel.get(key.modelName);
    if (found === undefined) {
      found = load();
      byModel.set(key.modelName, found);
    }
    return found;
  }
}

/** A model version's rows in the store. */
function storeKey(model: CatalogModel, version: number): string {
  return JSON.stringify([model.model.entity, model.model.modelName, version]);
}
