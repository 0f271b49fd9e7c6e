/**
 * The revision history of each model config: who changed it, when, why, and the document it became.
 * The ConfigStore port keeps only the current document (the file store has no history at all, and
 * etcd compacts its own), so every change made through the console's API or `lattice models apply`
 * appends a record under a key prefix of its own, `model-revisions/<id>/r<revision>`, one key per
 * record: it works the same on every backend, a record is never rewritten, and no single document
 * grows with the history (etcd limits a value's size). Only the newest `keep` records of a config
 * are kept. Revisions count 1, 2, 3… per config; a record's revision is the one before plus one.
 *
 * Appends to one config are serialized by the caller within a process; two processes appending at
 * once may pick the same revision, and then the later record replaces the earlier one.
 */
import type { ConfigStore } from '../../platform/config-store/index.js';

export type RevisionAction = 'apply' | 'clone' | 'rollback' | 'delete' | 'external';

export interface ConfigRevision {
  revision: number;
  /** When it was recorded (ISO 8601). */
  at: string;
  /** Who: the API caller's name, the OS user of `lattice models apply`, or `config-store` for an outside change. */
  author: string;
  /** Why, in the author's words. */
  comment: string;
  action: RevisionAction;
  /** The document the config became; null when the change removed it. */
  document: unknown;
}

export const REVISIONS_PREFIX = 'model-revisions/';
/** Records kept per config. */
export const KEPT_REVISIONS = 50;

const DIGITS = 12;
const keyOf = (id: string, revision: number) =>
  `${REVISIONS_PREFIX}${id}/r${String(revision).padStart(DIGITS, '0')}`;

function isRevision(value: unknown): value is ConfigRevision {
  const record = value as Partial<ConfigRevision> | null;
  return (
    typeof record === 'object' &&
    record !== null &&
    typeof record.revision === 'number' &&
    typeof record.at === 'string' &&
    typeof record.action === 'string' &&
    'document' in record
  );
}

export class RevisionHistory {
  constructor(
    private readonly store: ConfigStore,
    private readonly keep = KEPT_REVISIONS,
  ) {}

  /** The kept records of `id`, newest first. */
  async list(id: string): Promise<ConfigRevision[]> {
    const entries = await this.store.list(`${REVISIONS_PREFIX}${id}/`);
    return entries
      .map((entry) => entry.value)
      .filter(isRevision)
      .sort((a, b) => b.revision - a.revision);
  }

  /** Every config's kept records, newest first, by config id (one read for the console's list). */
  async all(): Promise<Map<string, ConfigRevision[]>> {
    const byId = new Map<string, ConfigRevision[]>();
    for (const entry of await this.store.list(REVISIONS_PREFIX)) {
      const rest = entry.key.slice(REVISIONS_PREFIX.length);
      const slash = rest.lastIndexOf('/');
      if (slash <= 0 || !isRevision(entry.value)) continue;
      const id = rest.slice(0, slash);
      const records = byId.get(id) ?? [];
      records.push(entry.value);
      byId.set(id, records);
    }
    for (const records of byId.values()) records.sort((a, b) => b.revision - a.revision);
    return byId;
  }

  async latest(id: string): Promise<ConfigRevision | undefined> {
    return (await this.list(id))[0];
  }

  async get(id: string, revision: number): Promise<ConfigRevision | undefined> {
    const entry = await this.store.get(keyOf(id, revision));
    return entry !== undefined && isRevision(entry.value) ? entry.value : undefined;
  }

  /** Records a change as the revision after the newest one, and drops records past the kept number. */
  async append(id: string, change: Omit<ConfigRevision, 'revision' | 'at'>): Promise<ConfigRevision> {
    const kept = await this.list(id);
    const record: ConfigRevision = {
      revision: (kept[0]?.revision ?? 0) + 1,
      at: new Date().toISOString(),
      author: change.author,
      comment: change.comment,
      action: change.action,
      document: change.document ?? null,
    };
    await this.store.put(keyOf(id, record.revision), record);
    for (const old of kept.slice(this.keep - 1)) await this.store.delete(keyOf(id, old.revision));
    return record;
  }

  /** Takes back a record whose change could not be written. */
  async discard(id: string, revision: number): Promise<void> {
    await this.store.delete(keyOf(id, revision));
  }
}
