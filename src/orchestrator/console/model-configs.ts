/**
 * The model configs as the console sees and changes them: each one's state (what the config store
 * holds against what the running ModelRegistry serves), its revision history, and the changes a
 * person makes — apply, clone, roll back, delete — each validated first by the registry's own
 * validation (nothing is written when it fails), recorded with who and why, and answered once the
 * registry has taken the change in, so the answer says what serves.
 *
 * A change written to the store some other way (a file edited by hand, a tool writing etcd) is
 * recorded as an `external` revision when the store's watch shows a document that differs from
 * the newest recorded one, so the history has every version the registry saw.
 */
import type { ConfigStore, ConfigWatch } from '../../platform/config-store/index.js';
import { keyProblem } from '../../platform/config-store/index.js';
import { invalidArgument, LatticeError, notFound } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import { quote } from '../../platform/quote.js';
import {
  type ConfigProblem,
  ModelConfigError,
  type ModelRegistry,
  type ModelStatus,
  problemsOf,
} from '../config/index.js';
import { type ConfigRevision, type RevisionAction, RevisionHistory } from './revision-history.js';
import { sameDocument } from './same-document.js';

export type ModelConfigState = 'live' | 'rejected' | 'invalid' | 'removed';

export interface RejectedChange {
  version: string;
  at: string;
  error: string;
  problems: ConfigProblem[];
}

export interface ModelConfigSummary {
  model_config_id: string;
  state: ModelConfigState;
  /** The config store version serving now. */
  version?: string;
  loaded_at?: string;
  rejected?: RejectedChange;
  /** When the newest recorded revision was made. */
  changed_at?: string;
  /** The newest recorded revision (0 when none is recorded). */
  revision: number;
  /** How many revisions are kept. */
  revisions: number;
}

export interface ModelConfigDetail {
  model_config_id: string;
  state: ModelConfigState;
  /** The document stored now; null when there is none (removed, or not a readable document). */
  document: unknown;
  /** The document serving now; null when none serves. */
  live_document: unknown;
  version?: string;
  loaded_at?: string;
  rejected?: RejectedChange;
  /** The newest recorded revision, the one `expected_revision` is compared with. */
  revision: number;
}

export interface Validation {
  valid: boolean;
  problems: ConfigProblem[];
}

/** Who makes a change and why. */
export interface ChangeNote {
  author: string;
  comment: string;
  /** The newest revision the author saw; ABORTED when another one was recorded since. */
  expectedRevision?: number;
}

export interface ChangeResult {
  model_config_id: string;
  /** The revision recorded for the change. */
  revision: number;
  /** The config store version written (the version the registry serves once it loaded it). */
  version: string;
  state: ModelConfigState;
}

/** What the console needs of the running ModelRegistry. */
export type RegistryView = Pick<ModelRegistry<unknown>, 'status' | 'build' | 'onSettled' | 'splitsUsing'> & {
  get(id: string): { readonly document: unknown } | undefined;
};

export interface ModelConfigsOptions {
  store: ConfigStore;
  registry: RegistryView;
  logger: Logger;
  /** Default: the history in `store`. */
  history?: RevisionHistory;
  /** How long a change waits for the registry to take it in before answering anyway. Default 5000. */
  settleTimeoutMs?: number;
}

/** Where the registry reads model configs (its default prefix). */
export const MODELS_PREFIX = 'models/';
/** Author of revisions recorded for changes made outside the API. */
export const EXTERNAL_AUTHOR = 'config-store';

export class ModelConfigs {
  readonly history: RevisionHistory;
  private readonly store: ConfigStore;
  private readonly registry: RegistryView;
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Per config: the store revision of this process's latest write (its watch may still bring older ones). */
  private readonly written = new Map<string, number>();
  private watch: ConfigWatch | undefined;

  constructor(private readonly options: ModelConfigsOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.history = options.history ?? new RevisionHistory(options.store);
  }

  /** Follows the store to record changes made outside the API; resolves once the present ones are checked. */
  async start(): Promise<void> {
    if (this.watch !== undefined) return;
    const checks: Promise<unknown>[] = [];
    this.watch = await this.store.watch(
      MODELS_PREFIX,
      (event) => {
        const id = event.key.slice(MODELS_PREFIX.length);
        if (id === '' || id.includes('/') || event.type === 'invalid') return;
        const document = event.type === 'put' ? event.value : null;
        const { revision } = event;
        const check = this.serial(id, () => this.recordIfExternal(id, document, revision)).catch(
          (err: unknown) =>
            this.options.logger.warn({ err, model: id }, 'model config history: cannot record a change'),
        );
        checks.push(check);
      },
      {
        initial: true,
        onError: (err) => this.options.logger.warn({ err }, 'model config history watch: %s', err.message),
      },
    );
    await Promise.all(checks);
  }

  async stop(): Promise<void> {
    await this.watch?.close();
    this.watch = undefined;
  }

  /** Every config the store holds, the registry knows or the history remembers. */
  async list(): Promise<ModelConfigSummary[]> {
    const unreadable = new Set<string>();
    const [entries, histories] = await Promise.all([
      this.store.list(MODELS_PREFIX, {
        onInvalid: (invalid) => unreadable.add(invalid.key.slice(MODELS_PREFIX.length)),
      }),
      this.history.all(),
    ]);
    const stored = new Map<string, unknown>();
    for (const entry of entries) {
      const id = entry.key.slice(MODELS_PREFIX.length);
      if (!id.includes('/')) stored.set(id, entry.value);
    }
    const statuses = new Map(this.registry.status().map((status) => [status.id, status]));
    const ids = new Set([...stored.keys(), ...unreadable, ...statuses.keys(), ...histories.keys()]);
    return [...ids].sort().map((id) => {
      const status = statuses.get(id);
      const records = histories.get(id) ?? [];
      const summary: ModelConfigSummary = {
        model_config_id: id,
        state: this.stateOf(id, stored.has(id) || unreadable.has(id), stored.get(id), status),
        revision: records[0]?.revision ?? 0,
        revisions: records.length,
        ...served(status),
      };
      if (records[0] !== undefined) summary.changed_at = records[0].at;
      return summary;
    });
  }

  async get(id: string): Promise<ModelConfigDetail> {
    const [stored, latest] = await Promise.all([this.readStored(id), this.history.latest(id)]);
    const status = this.registry.status().find((s) => s.id === id);
    if (!stored.exists && status === undefined && latest === undefined) throw unknownConfig(id);
    return {
      model_config_id: id,
      state: this.stateOf(id, stored.exists, stored.document, status),
      document: stored.document ?? null,
      live_document: this.registry.get(id)?.document ?? null,
      revision: latest?.revision ?? 0,
      ...served(status),
    };
  }

  async revisions(id: string): Promise<ConfigRevision[]> {
    const records = await this.history.list(id);
    if (records.length === 0 && !(await this.readStored(id)).exists) throw unknownConfig(id);
    return records;
  }

  /** The registry's own validation of `document` as the config `id` (its model_config_id when absent). */
  validate(document: unknown, id?: string): Validation {
    const target = id ?? modelIdOf(document) ?? '';
    try {
      this.registry.build(target === '' ? '(unnamed)' : target, 'validate', document);
      return { valid: true, problems: [] };
    } catch (err) {
      return { valid: false, problems: problemsOf(err) };
    }
  }

  /** Writes `document` as the config `id`: INVALID_ARGUMENT with every problem when it does not validate. */
  apply(id: string, document: unknown, note: ChangeNote): Promise<ChangeResult> {
    checkId(id, 'model_config_id');
    return this.serial(id, async () => {
      this.mustValidate(id, document);
      return this.write(id, document, 'apply', note);
    });
  }

  /** Copies the stored document of `id` to `newId` (its model_config_id changed to match). */
  async clone(id: string, newId: string, note: ChangeNote): Promise<ChangeResult> {
    checkId(newId, 'new_id');
    const source = await this.readStored(id);
    if (!source.exists || source.document === undefined) throw unknownConfig(id);
    if (typeof source.document !== 'object' || source.document === null || Array.isArray(source.document))
      throw invalidArgument(`model config ${quote(id)} is not a JSON object to clone`, 'model_config_id');
    const document = { ...(source.document as Record<string, unknown>), model_config_id: newId };
    return this.serial(newId, async () => {
      if ((await this.readStored(newId)).exists)
        throw new LatticeError('ALREADY_EXISTS', `model config ${quote(newId)} already exists`, {
          field: 'new_id',
        });
      this.mustValidate(newId, document);
      return this.write(newId, document, 'clone', {
        ...note,
        comment: note.comment || `cloned from ${id}`,
      });
    });
  }

  /** Writes the document of an earlier revision as a new revision. */
  rollback(id: string, revision: number, note: ChangeNote): Promise<ChangeResult> {
    checkId(id, 'model_config_id');
    return this.serial(id, async () => {
      const record = await this.history.get(id, revision);
      if (record === undefined)
        throw notFound(
          `model config ${quote(id)} has no revision ${revision} (kept: the newest ones)`,
          'revision',
        );
      if (record.document === null)
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `revision ${revision} of ${quote(id)} removed the config: there is no document to roll back to`,
          { field: 'revision' },
        );
      this.mustValidate(id, record.document);
      return this.write(id, record.document, 'rollback', {
        ...note,
        comment: note.comment || `rolled back to revision ${revision}`,
      });
    });
  }

  /** Removes the config: it stops serving; its history stays, so it can be rolled back. */
  remove(id: string, note: ChangeNote): Promise<ChangeResult> {
    checkId(id, 'model_config_id');
    return this.serial(id, async () => {
      if (!(await this.readStored(id)).exists) throw unknownConfig(id);
      // Removed anyway (outside the API), its keys would be served by the splitting config itself.
      const splits = this.registry.splitsUsing(id);
      if (splits.length > 0)
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `model config ${quote(id)} is an arm of the split of ${splits.map((s) => quote(s)).join(', ')}: take it out of the split first`,
          { field: 'model_config_id' },
        );
      return this.write(id, null, 'delete', note);
    });
  }

  private mustValidate(id: string, document: unknown): void {
    const { valid, problems } = this.validate(document, id);
    if (!valid) throw new ModelConfigError(id, problems);
  }

  /**
   * Records the change, then writes it (a watch that sees the write finds it recorded, in this
   * process and in others), then waits for the registry to take it in.
   */
  private async write(
    id: string,
    document: unknown,
    action: RevisionAction,
    note: ChangeNote,
  ): Promise<ChangeResult> {
    const latest = await this.history.latest(id);
    if (note.expectedRevision !== undefined && note.expectedRevision !== (latest?.revision ?? 0)) {
      throw new LatticeError(
        'ABORTED',
        `model config ${quote(id)} is at revision ${latest?.revision ?? 0}, not ${note.expectedRevision}: reload it and apply the change again`,
        { field: 'expected_revision' },
      );
    }
    const record = await this.history.append(id, {
      author: note.author,
      comment: note.comment,
      action,
      document,
    });
    let version: number;
    try {
      if (document === null) {
        await this.store.delete(`${MODELS_PREFIX}${id}`);
        version = 0;
      } else {
        version = await this.store.put(`${MODELS_PREFIX}${id}`, document);
        this.written.set(id, version);
      }
    } catch (err) {
      await this.history.discard(id, record.revision).catch(() => {});
      throw err;
    }
    const settled = await this.settled(id, version, document === null);
    const status = this.registry.status().find((s) => s.id === id);
    return {
      model_config_id: id,
      revision: record.revision,
      version: settled ?? String(version),
      state: this.stateOf(id, document !== null, document ?? undefined, status),
    };
  }

  /** Waits until the registry has dealt with version `version` of `id` (or a later one). */
  private settled(id: string, version: number, removed: boolean): Promise<string | undefined> {
    const timeoutMs = this.options.settleTimeoutMs ?? 5000;
    return new Promise((resolve) => {
      const done = (result: string | undefined) => {
        clearTimeout(timer);
        unsubscribe();
        resolve(result);
      };
      const unsubscribe = this.registry.onSettled((change) => {
        if (change.id !== id) return;
        if (removed ? change.outcome === 'removed' : Number(change.version) >= version) done(change.version);
      });
      const timer = setTimeout(() => done(undefined), timeoutMs);
      // Already taken in before the listener was added (the file watch may be quick).
      const status = this.registry.status().find((s) => s.id === id);
      if (removed && status === undefined) done(undefined);
      else if (!removed && status !== undefined) {
        const seen = Math.max(Number(status.version ?? 0), Number(status.rejected?.version ?? 0));
        if (seen >= version) done(String(seen));
      }
    });
  }

  private async recordIfExternal(id: string, document: unknown, revision: number): Promise<void> {
    // This process's own write, or one before it, seen late: recorded already.
    if (revision <= (this.written.get(id) ?? 0)) return;
    const latest = await this.history.latest(id);
    if (latest === undefined ? document === null : sameDocument(latest.document, document)) return;
    await this.history.append(id, {
      author: EXTERNAL_AUTHOR,
      comment:
        document === null
          ? 'removed outside the API'
          : latest === undefined
            ? 'written outside the API before its history began'
            : 'changed outside the API',
      action: 'external',
      document,
    });
  }

  private stateOf(
    id: string,
    exists: boolean,
    document: unknown,
    status: ModelStatus | undefined,
  ): ModelConfigState {
    if (!exists) return 'removed';
    if (status?.rejected !== undefined) return status.version === undefined ? 'invalid' : 'rejected';
    if (status?.version !== undefined) return 'live';
    // Written but not taken in yet: what the registry will make of it.
    return document !== undefined && this.validate(document, id).valid ? 'live' : 'invalid';
  }

  private async readStored(id: string): Promise<{ exists: boolean; document: unknown }> {
    try {
      const entry = await this.store.get(`${MODELS_PREFIX}${id}`);
      return { exists: entry !== undefined, document: entry?.value };
    } catch (err) {
      // A document that does not parse exists, but has no content to show.
      if (err instanceof LatticeError && err.code === 'INVALID_ARGUMENT')
        return { exists: true, document: undefined };
      throw err;
    }
  }

  /** Runs `work` after every earlier piece of work on `id` in this process. */
  private serial<T>(id: string, work: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.catch(() => {});
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return next;
  }
}

function served(
  status: ModelStatus | undefined,
): Pick<ModelConfigSummary, 'version' | 'loaded_at' | 'rejected'> {
  const out: Pick<ModelConfigSummary, 'version' | 'loaded_at' | 'rejected'> = {};
  if (status?.version !== undefined) out.version = status.version;
  if (status?.loadedAt !== undefined) out.loaded_at = new Date(status.loadedAt).toISOString();
  if (status?.rejected !== undefined) {
    out.rejected = {
      version: status.rejected.version,
      at: new Date(status.rejected.at).toISOString(),
      error: status.lastError ?? '',
      problems: [...(status.problems ?? [])],
    };
  }
  return out;
}

function modelIdOf(document: unknown): string | undefined {
  const id = (document as { model_config_id?: unknown } | null)?.model_config_id;
  return typeof id === 'string' ? id : undefined;
}

function checkId(id: string, field: string): void {
  const problem = id.includes('/') ? 'contains a slash' : keyProblem(id);
  if (problem !== undefined) throw invalidArgument(`model config id ${quote(id)} ${problem}`, field);
}

function unknownConfig(id: string): LatticeError {
  return notFound(`no model config ${quote(id)}`, 'model_config_id');
}
