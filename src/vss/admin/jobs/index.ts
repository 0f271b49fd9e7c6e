/**
 * Ingestion jobs of vss admin: the `JobRunner` port and its two adapters, the built-in runner that
 * reads Parquet / JSON Lines training data itself and the HTTP runner of an external batch platform.
 */
export { FileJobRunner, type FileJobRunnerOptions } from './file-job-runner.js';
export { FileJobStateStore, type FileJobStateStoreOptions } from './file-job-state-store.js';
export { HttpJobRunner, type HttpJobRunnerOptions, jobBody } from './http-job-runner.js';
export { jobFingerprint, validateJob } from './ingestion-job.js';
export {
  type BadRow,
  type IngestionJob,
  JOB_KINDS,
  JOB_STATES,
  type JobKind,
  type JobRunner,
  type JobState,
  type JobStatus,
} from './job-runner.js';
export {
  type JobCheckpoint,
  type JobRecord,
  type JobStateStore,
  MemoryJobStateStore,
} from './job-state-store.js';
export type { PublishRetry } from './publish-window.js';
export { SqlJobStateStore } from './sql-job-state-store.js';
export { confineTrainingDataPath } from './training-data-roots.js';
