/**
 * The `JobRunner` port: how vss admin starts and watches the batch job that turns a model's
 * `training_data_path` into embedding events and EOF markers on the ingestion topic (vss.md, "Queue
 * events"). Two adapters: `FileJobRunner` (built in: reads Parquet / JSON Lines files itself) and
 * `HttpJobRunner` (an external batch platform over HTTP). Either way the consumers see the same
 * events, so admin does not care which one ran.
 *
 * Guarantees, for every adapter:
 *
 * - **Idempotent start.** `start(job)` with a job id that is already known never runs the job a
 *   second time alongside the first: while it runs, or once it SUCCEEDED, start only returns its
 *   status. A job that FAILED (or was cancelled, or was interrupted by a crash of the process that
 *   ran it) is started again, resuming where the adapter can (the built-in runner: from its last
 *   checkpoint). The same id with other parameters is ALREADY_EXISTS.
 * - **After a crash.** Admin's recovery is to call `start(job)` again for each job an operation is
 *   waiting on, then poll `status`; a job whose dead runner still holds it reports RUNNING until it
 *   is taken over (the built-in runner takes it over in the `status` that finds its lease lapsed). Republishing is harmless (every event is an idempotent upsert,
 *   carries the job id, and is byte-identical on a re-run, so the consumers count it once) but
 *   wasteful, so adapters avoid it where they can (see each adapter).
 * - **Bad rows do not stop a job**: each is skipped and reported (file, row, reason) in a capped
 *   list plus an exact count. A job whose input cannot be read at all fails with a clear message.
 * - **EOF last.** A job publishes one EOF marker to every partition of the topic only after every
 *   one of its events is durably on the queue; a job that fails or is cancelled sends none, so the
 *   consumers never complete an ingestion that lacks rows.
 */
import type { IngestionColumnMapping } from '../../store/index.js';

export const JOB_KINDS = ['RESET', 'DELTA'] as const;
/** A reset fills a new version; a delta adds or replaces candidates in the current write version. */
export type JobKind = (typeof JOB_KINDS)[number];

/** Everything a runner needs to turn the training data into embedding events (vss.md). */
export interface IngestionJob {
  /** Unique per job; events carry it as `job_id`, so the consumers count them per job. */
  jobId: string;
  kind: JobKind;
  entity: string;
  modelName: string;
  /** The embedding-store version the events write (the event's `version`). */
  version: number;
  /** A file or a directory of Parquet / JSON Lines files; `file://` URL or plain path for the built-in runner. */
  trainingDataPath: string;
  /** The model's `ingestion_column_mapping`: which source columns hold the id, vectors and index flag. */
  columns: IngestionColumnMapping;
  /** The model's `vector_dimension`: rows with vectors of another length are bad rows. */
  vectorDimension: number;
  /** `index_space.variants_version_map` of every event: variant → the version its point is written to. */
  variantVersions: Readonly<Record<string, number>>;
  /**
   * Each variant's index flag for rows whose `to_be_indexed_column` is absent or null (a variant left
   * out here defaults to true). A row's own flag, when it has one, wins.
   */
  indexDefaults: Readonly<Record<string, boolean>>;
  /** The ingestion topic (`vss.consumers.embeddingsTopic`, `vss-embeddings` by default). */
  topic: string;
  /** Partitions of the topic (`vss.consumers.partitions`): one EOF marker goes to each. */
  partitions: number;
}

export const JOB_STATES = ['RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** A row that was skipped: the file (relative to the training data path), its 1-based row, and why. */
export interface BadRow {
  file: string;
  row: number;
  reason: string;
}

export interface JobStatus {
  jobId: string;
  state: JobState;
  /** 0..1; 1 only once SUCCEEDED. */
  progress: number;
  /** Rows (or lines) read, bad ones included. */
  rowsRead: number;
  /** Embedding events durably on the queue. */
  rowsPublished: number;
  /** Every bad row counted; `badRows` holds the first of them (a capped list). */
  badRowCount: number;
  badRows: BadRow[];
  /** What the job is doing, what it did, or why it failed. */
  message: string;
}

export interface JobRunner {
  /** Which adapter this is, for logs and status output. */
  readonly kind: 'file' | 'http';
  /**
   * Starts the job (see the guarantees above for a known id) and returns its status. Problems with
   * the data show as a FAILED status later; start itself fails only for an invalid job
   * (INVALID_ARGUMENT), a conflicting one (ALREADY_EXISTS), or an unreachable platform.
   */
  start(job: IngestionJob): Promise<JobStatus>;
  /** The job's status; NOT_FOUND for an id this runner never saw. */
  status(jobId: string): Promise<JobStatus>;
  /**
   * Stops a running job without sending its EOF markers; its status becomes FAILED ("cancelled")
   * and a later `start` resumes it. A finished job is left as it is. NOT_FOUND for an unknown id.
   */
  cancel(jobId: string): Promise<JobStatus>;
  /** Stops every job this process runs (resumable, as after a crash) and releases resources. */
  close(): Promise<void>;
}
