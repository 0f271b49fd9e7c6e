/**
 * The sweep that drops versions whose rollback grace period is over (`vss.admin.rollbackGraceMs`,
 * docs/vss.md "Recall gate and rollback"). A reset's drop_previous step leaves a retired version in
 * place while rollback-model may still serve it again; each sweep then, per expired version:
 *
 * 1. in one transaction, RETIRED → DROPPED only if the grace period is still over under the row's
 *    lock (by the database's clock: a rollback that took it back first wins), with its embedding
 *    rows and ingestion ledger;
 * 2. drops its collection on every vector DB this admin reaches ("drop if present").
 *
 * The sweep also prunes serving's live recall samples older than a day (at most once an hour): the
 * automatic rollback reads minutes of them (recall-watch.ts).
 *
 * Marking first means serving refuses the version (stale page tokens) before its collection goes.
 * A crash between the two leaves a collection of a DROPPED version: the first sweep of each engine
 * (`leftovers`) drops the collections of every DROPPED version still listed, so nothing leaks.
 */
import { describeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import { collectionName } from '../../model/index.js';
import type { ModelVersion, VssStore } from '../../store/index.js';
import type { VectorDbs } from './vector-dbs.js';

export interface RetiredVersionSweepOptions {
  store: VssStore;
  vectorDbs: VectorDbs;
  graceMs: number;
  logger: Logger;
}

/**
 * One sweep; resolves to the versions dropped (`entity/model@version`). With `leftovers`, also the
 * collections of versions dropped earlier that are still there.
 */
export async function sweepRetiredVersions(
  options: RetiredVersionSweepOptions,
  leftovers = false,
): Promise<string[]> {
  const { store, vectorDbs, graceMs } = options;
  const dropped: string[] = [];
  const marked: ModelVersion[] = [];
  for (const version of await store.versions.listExpiredRetired(graceMs)) {
    const done = await store.transaction(async (r) => {
      if (!(await r.versions.dropIfExpired(version, graceMs))) return false;
      const model = await r.models.get(version);
      const table = (await r.stores.get(model.storeId)).embeddingsTable;
      await r.embeddings.dropVersion(table, version.modelName, version.version);
      await r.ingestion.forgetVersion(version);
      return true;
    });
    if (!done) continue;
    marked.push(version);
    dropped.push(`${version.entity}/${version.modelName}@${version.version}`);
  }
  for (const version of marked) {
    for (const type of vectorDbs.types()) await vectorDbs.dropCollection(version, version.version, type);
  }
  if (!leftovers) return dropped;
  // Collections of DROPPED versions still present (left by a crash between marking and dropping).
  for (const type of vectorDbs.types()) {
    const names = new Set(await vectorDbs.get(type).listCollections());
    if (names.size === 0) continue;
    for (const model of await store.models.list()) {
      for (const version of await store.versions.list(model)) {
        if (version.status !== 'DROPPED') continue;
        if (!names.has(collectionName(model.entity, model.modelName, version.version))) continue;
        await vectorDbs.dropCollection(model, version.version, type);
      }
    }
  }
  return dropped;
}

const PRUNE_EVERY_MS = 3_600_000;
const LIVE_RECALL_KEPT_MS = 86_400_000;

/** Runs the sweep every `intervalMs` until stopped (errors are logged; the next sweep tries again). */
export class RetiredVersionSweeper {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;
  #swept = false;
  #prunedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: RetiredVersionSweepOptions & { intervalMs: number }) {}

  start(): void {
    if (this.options.graceMs <= 0 || this.#stopped) return;
    this.#timer = setInterval(() => void this.sweep(), this.options.intervalMs);
    this.#timer.unref();
  }

  /** One sweep now (or the one under way). */
  sweep(): Promise<string[]> {
    const leftovers = !this.#swept;
    this.#swept = true;
    const prune = Date.now() - this.#prunedAt >= PRUNE_EVERY_MS;
    if (prune) this.#prunedAt = Date.now();
    this.#running ??= sweepRetiredVersions(this.options, leftovers)
      .then(async (dropped) => {
        if (prune) await this.options.store.liveRecall.prune(LIVE_RECALL_KEPT_MS);
        return dropped;
      })
      .catch((err: unknown) => {
        this.options.logger.warn(
          { err: describeError(err) },
          'vss admin: sweep of retired versions failed; trying again later',
        );
        return [] as string[];
      })
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running as Promise<string[]>;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#running;
  }
}
