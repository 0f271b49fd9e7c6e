/**
 * Validation of an {@link IngestionJob} at the runners' boundary, by the rules the consumers apply to
 * the events it will produce (names, versions, variant names, dimension), so a job that could only
 * produce refused events is refused before it reads a row. Also the job's fingerprint, by which a
 * runner tells "the same job again" from "another job under a known id".
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { invalidArgument } from '../../../platform/errors.js';
import { quote } from '../../../platform/quote.js';
import { type IngestionJob, JOB_KINDS } from './job-runner.js';

const RESOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const VARIANT_NAME = /^[a-z][a-z0-9_]{0,48}$/;
/** The queue's topic names (platform/queue/validation.ts). */
const TOPIC_NAME = /^[A-Za-z0-9_-]{1,200}$/;
const MAX_DIMENSION = 65_536;
const MAX_VARIANTS = 64;

const resourceName = z
  .string()
  .regex(RESOURCE_NAME, 'must be 1-128 letters, digits, "_", "-" or "." (starting with a letter or digit)');
const version = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31 - 1);
const column = z.string().min(1, 'must name a column').max(1024);
const variant = z.string().regex(VARIANT_NAME, 'is not a variant name');

const jobSchema = z
  .object({
    jobId: z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    kind: z.enum(JOB_KINDS),
    entity: resourceName,
    modelName: resourceName,
    version,
    trainingDataPath: z.string().min(1, 'must not be empty'),
    columns: z.object({
      idColumn: column,
      embeddingColumn: column,
      toBeIndexedColumn: column,
      searchEmbeddingColumn: column.optional(),
    }),
    vectorDimension: z.number().int().min(1).max(MAX_DIMENSION),
    variantVersions: z
      .record(variant, version)
      .refine((map) => Object.keys(map).length >= 1, 'must name at least one variant')
      .refine((map) => Object.keys(map).length <= MAX_VARIANTS, `must name at most ${MAX_VARIANTS} variants`),
    indexDefaults: z.record(variant, z.boolean()),
    topic: z.string().regex(TOPIC_NAME, 'is not a queue topic name'),
    partitions: z.number().int().min(1).max(1024),
  })
  .superRefine((job, ctx) => {
    const { idColumn, embeddingColumn, toBeIndexedColumn, searchEmbeddingColumn } = job.columns;
    const named = [idColumn, embeddingColumn, toBeIndexedColumn, searchEmbeddingColumn].filter(
      (c) => c !== undefined,
    );
    if (new Set(named).size !== named.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['columns'],
        message: 'must name a different column for each role',
      });
    }
    for (const name of Object.keys(job.indexDefaults)) {
      if (!(name in job.variantVersions)) {
        ctx.addIssue({
          code: 'custom',
          path: ['indexDefaults', name],
          message: 'names a variant that variantVersions does not',
        });
      }
    }
  });

/** The job, checked; INVALID_ARGUMENT naming the first offending field otherwise. */
export function validateJob(job: IngestionJob): IngestionJob {
  const result = jobSchema.safeParse(job);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map(String).join('.') || 'job';
  throw invalidArgument(`ingestion job: ${field} ${issue.message}`, field);
}

/** A digest of everything the job does (map keys sorted), equal for equal jobs. */
export function jobFingerprint(job: IngestionJob): string {
  return createHash('sha256').update(canonicalJson(job)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The error for a known job id started with other parameters. */
export function conflictMessage(jobId: string): string {
  return `ingestion job ${quote(jobId)} already exists with other parameters; use a new job id for another job`;
}
