import type { LatticeError } from '../errors.js';

/**
 * The ConfigStore port: JSON documents under slash-path keys (`models/catalog_ranker`,
 * `compute/blend`), readable, writable and watchable by key prefix. Services depend on this
 * interface only; `FileConfigStore` (a directory of JSON/YAML files) and `EtcdConfigStore` (etcd v3)
 * implement it with the same semantics, which `test/platform/config-store/contract.ts` pins down.
 *
 * Keys: see `keys.ts` (no empty segments, no leading slash, no `.`/`..`). Prefixes match by string
 * prefix, as in etcd: `models/` matches `models/a`; `models` also matches `models_v2/a`.
 *
 * Malformed documents (bad JSON or YAML text written by someone else) never break a reader: `get`
 * throws INVALID_ARGUMENT naming the key or file and the error position; `list` skips them and
 * reports each to `onInvalid`; `watch` delivers an `invalid` event and keeps going.
 */
export interface ConfigStore {
  /**
   * The document stored under `key` with its revision, or `undefined` when there is none. Throws
   * INVALID_ARGUMENT for an invalid key or a malformed document (naming the key or file and the
   * line/column of the error), UNAVAILABLE or DEADLINE_EXCEEDED when the backend does not answer in time.
   */
  get(key: string): Promise<ConfigEntry | undefined>;

  /**
   * Every valid document whose key starts with `prefix` (`''` for all), sorted by key, read as one
   * consistent snapshot where the backend allows it (etcd: at one revision). Malformed documents are
   * left out and passed to `options.onInvalid`.
   */
  list(prefix: string, options?: ConfigListOptions): Promise<ConfigEntry[]>;

  /**
   * Stores `value` (anything JSON can represent) under `key`, replacing what was there, and resolves
   * to the entry's new revision. Throws INVALID_ARGUMENT for an invalid key or a value JSON cannot
   * represent (undefined, functions, bigint, NaN, cycles, class instances).
   */
  put(key: string, value: unknown): Promise<number>;

  /** Removes the document under `key`; resolves to whether there was one. */
  delete(key: string): Promise<boolean>;

  /**
   * Calls `listener` for every change to a key starting with `prefix`, in the order the changes
   * happened, until the returned handle is closed. With `initial: true` the listener first gets a
   * `put` (or `invalid`) for every existing key, then every later change with no gap in between.
   * The promise resolves once the watch is live and the initial events have been delivered, so a
   * change made after it resolves is always seen. Lost connections and server restarts are recovered
   * from without help: changes made meanwhile are delivered when the watch resumes (as the differences
   * against what the listener last saw, if the backend no longer has the history). A watch that
   * cannot be set up rejects (UNAVAILABLE naming the endpoint, within the timeout) and leaves nothing
   * behind.
   */
  watch(prefix: string, listener: ConfigListener, options?: ConfigWatchOptions): Promise<ConfigWatch>;

  /** Closes every watch and releases connections, timers and file handles; later calls reject. */
  close(): Promise<void>;
}

/** A document and the revision it was last changed at. */
export interface ConfigEntry {
  readonly key: string;
  /** The parsed JSON document. */
  readonly value: unknown;
  /**
   * Grows each time the key changes. etcd: the key's mod_revision (cluster-wide, comparable across
   * keys). File store: the file's modification time in microseconds, raised where needed so that it
   * grows with every change one store instance observes.
   */
  readonly revision: number;
}

export interface ConfigPutEvent {
  readonly type: 'put';
  readonly key: string;
  readonly value: unknown;
  readonly revision: number;
}

export interface ConfigDeleteEvent {
  readonly type: 'delete';
  readonly key: string;
  readonly revision: number;
}

/**
 * A document under `key` could not be parsed (or, in the file store, a file's name is not a valid
 * key). It is skipped: a listener keeps using the last good value it had for the key, and gets a `put`
 * once the document is fixed or a `delete` once it is removed.
 */
export interface ConfigInvalidEvent {
  readonly type: 'invalid';
  readonly key: string;
  /** What is wrong and where: the file or etcd key, the line and column, the parser's message. */
  readonly reason: string;
  readonly revision: number;
}

export type ConfigEvent = ConfigPutEvent | ConfigDeleteEvent | ConfigInvalidEvent;

/** Called synchronously, one event at a time; a returned promise is not awaited. */
export type ConfigListener = (event: ConfigEvent) => void;

export interface ConfigListOptions {
  /** Receives each malformed document that was left out of the result. */
  onInvalid?: (invalid: ConfigInvalidEvent) => void;
}

export interface ConfigWatchOptions {
  /** Deliver every existing key as a `put` (or `invalid`) event first. Default false. */
  initial?: boolean;
  /**
   * Receives problems the watch recovers from by itself (lost connection, history compacted away,
   * file watcher failure) and errors thrown by the listener. Without it they are emitted as process
   * warnings. The watch keeps going either way.
   */
  onError?: (error: LatticeError) => void;
}

export interface ConfigWatch {
  /** Stops the watch; no event is delivered after the promise resolves. Safe to call twice. */
  close(): Promise<void>;
}
