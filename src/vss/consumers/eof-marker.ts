/**
 * The EOF marker a batch job sends to every partition of the ingestion topic after its embedding
 * events, so each partition's marker arrives after that partition's events. Two shapes:
 *
 * - the design's: `{ "eof": true, "entity", "model_name", "version", "job_id", "partition" }`;
 * - the original system's (skye-notes §5.4): an embedding event whose `candidate_id` is `"EOF"`,
 *   with `embedding_store_version` and `partition` as decimal text and no job id. Its markers belong
 *   to the version's job {@link DEFAULT_JOB_ID}; the original's producer leaves `partition` empty,
 *   which is refused here (naming `partition`) rather than guessed.
 */
import { z } from 'zod';
import {
  checkVersionSpellings,
  expect,
  integerField,
  jobIdField,
  parseOrReject,
  resourceNameField,
  versionField,
} from './event-fields.js';

export interface EofMarker {
  entity: string;
  modelName: string;
  version: number;
  jobId: string;
  /** The partition whose events this marker closes. */
  partition: number;
}

/** The job of markers that name none (the original system's shape). */
export const DEFAULT_JOB_ID = 'default';

/** The candidate id by which the original system's producers mark the end of a partition. */
export const ORIGINAL_EOF_ID = 'EOF';

const partitionField = integerField(0, 65_535, 'a partition number from 0 to 65535');

const eofSchema = z
  .object(
    {
      entity: resourceNameField,
      model_name: resourceNameField,
      version: versionField.optional(),
      embedding_store_version: versionField.optional(),
      job_id: jobIdField.optional(),
      partition: partitionField,
    },
    { error: expect('a JSON object') },
  )
  .superRefine(checkVersionSpellings);

/** Whether a decoded message is an EOF marker in either shape (else it is an embedding event). */
export function isEofMarker(message: unknown): boolean {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return false;
  const fields = message as Record<string, unknown>;
  return fields.eof === true || fields.candidate_id === ORIGINAL_EOF_ID;
}

/** Validates a decoded EOF marker; throws RejectedEvent naming the field. */
export function parseEofMarker(message: unknown): EofMarker {
  const raw = parseOrReject(eofSchema, message, 'EOF marker');
  return {
    entity: raw.entity,
    modelName: raw.model_name,
    version: (raw.version ?? raw.embedding_store_version)!,
    jobId: raw.job_id ?? DEFAULT_JOB_ID,
    partition: raw.partition,
  };
}
