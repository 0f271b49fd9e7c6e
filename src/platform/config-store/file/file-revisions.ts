/**
 * Revisions for the file store, where the file system has none: a document's revision is its
 * modification time in microseconds, raised where needed so that every new version this store
 * instance observes, of any key, gets a higher number than every one before it (two writes within
 * one timestamp tick share an mtime, and file times come from a coarser clock than the deletion
 * times taken from `Date.now()`). Every reader of one store (get, list, put, each watch) shares one
 * clock, so they agree on the revision of a given version of a file.
 */
export class FileRevisions {
  private readonly byKey = new Map<string, { latest: number; versions: Map<string, number> }>();
  /** The highest revision handed out, for any key. */
  private latest = 0;

  /** The revision of the version of `key` identified by `fingerprint`. */
  revisionOf(key: string, fingerprint: string, mtimeUs: number): number {
    let history = this.byKey.get(key);
    if (history === undefined) {
      history = { latest: 0, versions: new Map() };
      this.byKey.set(key, history);
    }
    const known = history.versions.get(fingerprint);
    if (known !== undefined) return known;
    const revision = Math.max(mtimeUs, this.latest + 1);
    this.latest = revision;
    history.latest = revision;
    history.versions.set(fingerprint, revision);
    // A watcher lagging behind may still ask for an older version; a few are enough to remember.
    if (history.versions.size > 16) {
      const oldest = history.versions.keys().next().value;
      if (oldest !== undefined) history.versions.delete(oldest);
    }
    return revision;
  }

  /** The revision of the removal of the version of `key` that had revision `previous`. */
  deletionOf(key: string, previous: number): number {
    return this.revisionOf(key, `deleted after ${previous}`, Date.now() * 1000);
  }
}
