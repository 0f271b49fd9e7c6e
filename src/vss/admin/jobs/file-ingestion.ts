/**
 * One run of a built-in ingestion job: list the training files, read them in order, publish one
 * embedding event per good row (bad rows counted and skipped), checkpoint now and then, and once
 * every event is on the queue, one EOF marker to each partition.
 *
 * Message ids are `<job>:<file tag>:<row>` (the tag a digest of the file's relative name) and
 * `<job>:eof:<partition>`: a re-run within the queue's de-duplication window stores nothing twice,
 * and past it the events are byte-identical, which the consumers' ledger counts once.
 */
import { createHash } from 'node:crypto';
import { LatticeError } from '../../../platform/errors.js';
import type { Queue } from '../../../platform/queue/index.js';
import { quote } from '../../../platform/quote.js';
import { EventEncoder } from './event-encoder.js';
import type { IngestionJob } from './job-runner.js';
import type { FileStamp, JobCheckpoint } from './job-state-store.js';
import type { JobTracker } from './job-tracker.js';
import { openJsonLinesRows } from './json-lines-rows.js';
import { openParquetRows } from './parquet-rows.js';
import { type PublishRetry, PublishWindow } from './publish-window.js';
import type { RowSource } from './row-source.js';
import { confineTrainingDataPath, confineTrainingFiles } from './training-data-roots.js';
import { listTrainingFiles, type TrainingFile } from './training-files.js';

export interface IngestionRunSettings {
  /** Publishes in flight at once. */
  concurrency: number;
  /** Rows read per batch. */
  batchRows: number;
  /** Least time between checkpoints, ms. */
  checkpointEveryMs: number;
  /** Where training data may be read from (training-data-roots.ts); absent: anywhere. */
  trainingDataRoots?: readonly string[];
  publishRetry: PublishRetry;
}

export interface IngestionRun {
  queue: Queue;
  job: IngestionJob;
  tracker: JobTracker;
  signal: AbortSignal;
  settings: IngestionRunSettings;
  /** Where an earlier run of the job stopped, if one did. */
  resumeFrom: JobCheckpoint | null;
  /** Records a consistent point (durably, or logs why not). */
  checkpoint(point: JobCheckpoint): Promise<void>;
}

export class JobCancelledError extends LatticeError {
  constructor(reason: string) {
    super('CANCELLED', reason);
    this.name = 'JobCancelledError';
  }
}

/** Runs the job to its EOF markers and returns what it did; throws why it could not. */
export async function runFileIngestion(run: IngestionRun): Promise<string> {
  const { queue, job, tracker, signal, settings } = run;
  await checkTopic(queue, job);
  const roots = settings.trainingDataRoots;
  if (roots !== undefined) await confineTrainingDataPath(job.trainingDataPath, roots);
  const files = await listTrainingFiles(job.trainingDataPath);
  if (roots !== undefined) await confineTrainingFiles(job.trainingDataPath, files, roots);
  const stamps: FileStamp[] = files.map(({ name, size, mtimeMs }) => ({ name, size, mtimeMs }));
  tracker.setFiles(files.map((file) => file.size));

  let fileIndex = 0;
  let after = 0;
  const resume = run.resumeFrom;
  if (resume !== null && sameFiles(resume.files, stamps)) {
    fileIndex = resume.fileIndex;
    after = resume.rowsDone;
    tracker.reset(resume.counters);
  } else {
    // The data changed since the interrupted run (or there was none): every row is read again.
    tracker.reset();
  }

  const encoder = new EventEncoder(job);
  const window = new PublishWindow(queue, job.topic, settings.concurrency, settings.publishRetry, signal);
  let lastCheckpoint = Date.now();
  const checkpoint = async (index: number, rowsDone: number) => {
    await window.drain();
    await run.checkpoint({ files: stamps, fileIndex: index, rowsDone, counters: tracker.counters });
    lastCheckpoint = Date.now();
  };
  // Stopped (cancelled, closing, or the job no longer this runner's): records how far it got, if it may.
  const stop = async (index: number, rowsDone: number): Promise<never> => {
    await checkpoint(index, rowsDone).catch(() => undefined);
    throw new JobCancelledError(String(signal.reason ?? 'cancelled'));
  };

  for (; fileIndex < files.length; fileIndex++, after = 0) {
    const file = files[fileIndex]!;
    const source = await openSource(file, job, encoder, settings.batchRows);
    const tag = createHash('sha256').update(file.name).digest('hex').slice(0, 12);
    const idPrefix = `${job.jobId}:${tag}:`;
    tracker.atFile(
      fileIndex,
      () => source.fraction(),
      `reading ${file.name} (file ${fileIndex + 1} of ${files.length})`,
    );
    let lastRow = after;
    try {
      for await (const batch of source.batches(after)) {
        if (signal.aborted) await stop(fileIndex, lastRow);
        for (const row of batch) {
          // Not one publish more once stopped (checked once the window has room for this row): the
          // rest of the batch is read again on resume.
          const room = window.room();
          if (room !== undefined) await room;
          if (signal.aborted) await stop(fileIndex, lastRow);
          tracker.read();
          lastRow = row.row;
          if ('error' in row) {
            tracker.bad({ file: file.name, row: row.row, reason: row.error });
            continue;
          }
          const event = encoder.encode(row.fields);
          if ('bad' in event) {
            tracker.bad({ file: file.name, row: row.row, reason: event.bad });
            continue;
          }
          const at = row.row;
          await window.add(event.payload, { key: event.key, messageId: idPrefix + at }, (outcome) => {
            if (outcome.stored) tracker.published();
            else tracker.bad({ file: file.name, row: at, reason: outcome.reason });
          });
        }
        if (Date.now() - lastCheckpoint >= settings.checkpointEveryMs) await checkpoint(fileIndex, lastRow);
        // The runner shares its process (the admin's HTTP server): give the event loop a turn.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      source.close();
    }
    await checkpoint(fileIndex + 1, 0);
  }

  const { rowsRead, rowsPublished, badRowCount, badRows } = tracker.counters;
  if (rowsPublished === 0 && badRowCount > 0) {
    const first = badRows[0]!;
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `every one of the ${rowsRead} rows was bad (first: ${first.file} row ${first.row}: ${first.reason}); ` +
        'no EOF markers were sent. Check ingestion_column_mapping and vector_dimension against the data',
    );
  }

  if (signal.aborted) throw new JobCancelledError(String(signal.reason ?? 'cancelled'));
  tracker.note(`sending EOF markers to ${job.partitions} partitions`);
  for (let partition = 0; partition < job.partitions; partition++) {
    const marker = {
      eof: true,
      entity: job.entity,
      model_name: job.modelName,
      version: job.version,
      job_id: job.jobId,
      partition,
    };
    await window.add(
      Buffer.from(JSON.stringify(marker)),
      { partition, messageId: `${job.jobId}:eof:${partition}` },
      () => undefined,
    );
  }
  await window.drain();
  return (
    `published ${rowsPublished} events from ${rowsRead} rows of ${files.length} file(s)` +
    `${badRowCount > 0 ? `, skipped ${badRowCount} bad rows` : ''}; EOF markers sent to ${job.partitions} partitions`
  );
}

async function checkTopic(queue: Queue, job: IngestionJob): Promise<void> {
  const topic = await queue.describeTopic(job.topic);
  if (topic.partitions !== job.partitions) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `queue topic "${job.topic}" has ${topic.partitions} partitions but the job says ${job.partitions}: ` +
        'the consumers complete a job only once every partition has its EOF marker',
      { field: 'partitions' },
    );
  }
}

async function openSource(
  file: TrainingFile,
  job: IngestionJob,
  encoder: EventEncoder,
  batchRows: number,
): Promise<RowSource> {
  if (file.format === 'jsonl') return openJsonLinesRows(file.path, file.name, file.size, { batchRows });
  const { idColumn, embeddingColumn, searchEmbeddingColumn } = job.columns;
  const vectorColumns =
    searchEmbeddingColumn === undefined ? [embeddingColumn] : [embeddingColumn, searchEmbeddingColumn];
  const source = await openParquetRows(file.path, file.name, { batchRows, vectorColumns });
  const columns = source.columns ?? [];
  const required: [string, string][] = [
    [idColumn, 'id_column'],
    [embeddingColumn, 'embedding_column'],
  ];
  let problem: string | undefined;
  for (const [column, role] of required) {
    if (!columns.includes(column)) {
      problem = `has no column ${quote(column)} (ingestion_column_mapping.${role}); its columns: ${columns.map((c) => quote(c)).join(', ')}`;
      break;
    }
  }
  problem ??= encoder.checkColumns(columns);
  if (problem !== undefined) {
    source.close();
    throw new LatticeError('FAILED_PRECONDITION', `${file.name} ${problem}`, { field: 'training_data_path' });
  }
  return source;
}

function sameFiles(a: readonly FileStamp[], b: readonly FileStamp[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (file, i) => file.name === b[i]!.name && file.size === b[i]!.size && file.mtimeMs === b[i]!.mtimeMs,
    )
  );
}
