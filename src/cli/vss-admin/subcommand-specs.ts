/**
 * The `lattice vss` admin subcommands as the command line sees them: each names its route of vss.md
 * "Admin HTTP API", the body fields its flags set (kebab-case of the API's snake_case) and its other
 * flags. admin-commands.ts declares them to the parser, subcommands.ts runs them. Nothing here
 * decides anything the API decides: bodies go as given and the API validates them.
 */
import { MODEL_TYPES } from '../../vss/admin/api/model-types.js';
import { JOB_FREQUENCIES, VECTOR_DB_TYPES } from '../../vss/store/types.js';
import type { BodyField } from './request-input.js';

export interface FlagHelp {
  flag: string;
  type: 'string' | 'boolean';
  /** The value placeholder in the usage (`ID`); none for booleans. */
  value?: string;
  help: string;
}

export type SubcommandName =
  | 'register-store'
  | 'register-model'
  | 'register-variant'
  | 'update-variant'
  | 'reset'
  | 'trigger'
  | 'promote'
  | 'rollback'
  | 'retry'
  | 'status'
  | 'models';

export interface SubcommandSpec {
  name: SubcommandName;
  /** What it does: its line in `lattice vss --help` and the first line of its own. */
  about: string;
  /** Body fields its flags set. */
  fields: readonly BodyField[];
  /** It sends a body: `--file` and `--idempotency-key` apply. */
  sendsBody: boolean;
  /** Its `--wait` default; undefined when it has no wait. */
  waitByDefault?: boolean;
  /** Its own flags beyond the fields and the common ones. */
  flags: readonly FlagHelp[];
  /** The name of its one positional argument, when it takes one. */
  positional?: string;
}

const field = (name: string, kind: BodyField['kind'] = 'string', aliases?: string[]): BodyField => ({
  field: name,
  flag: name.replaceAll('_', '-'),
  kind,
  ...(aliases === undefined ? {} : { aliases }),
});

/** A string field that takes one of the API's enum values. */
const choice = (name: string, choices: readonly string[]): BodyField => ({ ...field(name), choices });

const ENTITY = field('entity');
/** `--model-name`, or `--model` for short (what the operations' usage shows). */
const MODEL_NAME = field('model_name', 'string', ['model']);
const VARIANT = field('variant');

const STORE_FIELDS = [
  field('store_id', 'integer'),
  ENTITY,
  field('db_conf_id'),
  field('embeddings_table'),
  field('aggregator_table'),
];
const MODEL_FIELDS = [
  ENTITY,
  MODEL_NAME,
  field('ingestion_column_mapping', 'json'),
  field('embedding_store_enabled', 'boolean'),
  field('embedding_store_ttl', 'integer'),
  field('mq_id', 'integer'),
  field('model_config', 'json'),
  field('store_id', 'integer'),
  field('training_data_path'),
];
const VARIANT_FIELDS = [
  ENTITY,
  MODEL_NAME,
  VARIANT,
  field('vss_filter', 'json'),
  choice('vectordb_type', VECTOR_DB_TYPES),
  field('vectordb_config', 'json'),
  choice('job_frequency', JOB_FREQUENCIES),
  field('min_recall', 'number'),
];

export const SUBCOMMAND_SPECS: readonly SubcommandSpec[] = [
  {
    name: 'register-store',
    about: 'POST /register-store: the store of an entity (its embeddings and aggregator tables).',
    fields: STORE_FIELDS,
    sendsBody: true,
    flags: [],
  },
  {
    name: 'register-model',
    about: 'POST /register-model: a model (entity, model_name) with its ingestion and vector settings.',
    fields: MODEL_FIELDS,
    sendsBody: true,
    flags: [],
  },
  {
    name: 'register-variant',
    about: 'POST /register-variant: a variant of a model; on a model with data the API starts filling it.',
    fields: VARIANT_FIELDS,
    sendsBody: true,
    waitByDefault: false,
    flags: [],
  },
  {
    name: 'update-variant',
    about:
      "POST /update-variant: changes a variant's search width (--ef-search) live, without a rebuild; null in --file returns to its registered width.",
    fields: [ENTITY, MODEL_NAME, VARIANT, field('ef_search', 'integer')],
    sendsBody: true,
    flags: [],
  },
  {
    name: 'reset',
    about:
      'POST /reset-model: a full ingestion into the next version, indexing, then an atomic flip (--model-type DELTA: into the current version, no flip).',
    fields: [ENTITY, MODEL_NAME, choice('frequency', JOB_FREQUENCIES), choice('model_type', MODEL_TYPES)],
    sendsBody: true,
    waitByDefault: true,
    flags: [],
  },
  {
    name: 'trigger',
    about: 'POST /trigger-model-machine: starts indexing a variant whose version is ingested.',
    fields: [ENTITY, MODEL_NAME, VARIANT],
    sendsBody: true,
    waitByDefault: true,
    flags: [],
  },
  {
    name: 'promote',
    about:
      'POST /promote-variant (with --variant) or /promote-model: copies to the production cluster and serves from it.',
    fields: [ENTITY, MODEL_NAME, VARIANT],
    sendsBody: true,
    waitByDefault: true,
    flags: [],
  },
  {
    name: 'rollback',
    about:
      'POST /rollback-model: flips every variant back to the version it served before its last flip, at once (within that version’s grace period).',
    fields: [ENTITY, MODEL_NAME],
    sendsBody: true,
    flags: [],
  },
  {
    name: 'retry',
    about: 'POST /operations/{id}/retry: resumes a FAILED operation at the step it failed in.',
    fields: [],
    sendsBody: false,
    waitByDefault: true,
    flags: [{ flag: 'idempotency-key', type: 'string', value: 'KEY', help: 'sent as Idempotency-Key' }],
    positional: 'operation-id',
  },
  {
    name: 'status',
    about: 'GET /operations/{id}: an operation’s status, step, progress and last error.',
    fields: [],
    sendsBody: false,
    waitByDefault: false,
    flags: [],
    positional: 'operation-id',
  },
  {
    name: 'models',
    about: 'GET /models, or GET /models/{entity}/{model}: state, cluster and versions per variant.',
    fields: [],
    sendsBody: false,
    flags: [
      {
        flag: 'entity',
        type: 'string',
        value: 'E',
        help: 'with --model: that model only (and its versions)',
      },
      { flag: 'model', type: 'string', value: 'M', help: 'the model name (also --model-name)' },
      { flag: 'model-name', type: 'string', value: 'M', help: 'same as --model' },
    ],
  },
];
