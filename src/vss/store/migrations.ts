/**
 * The vss control-plane schema: stores, models, versions, variants and operations. Constraints keep
 * illegal rows out whatever writes them: enums and states are CHECKs, names follow the identifier
 * rules of identifiers.ts, a model's store belongs to its entity, a variant's read/write versions
 * exist, and a FAILED row always says why.
 *
 * CHECK constraints are named after the API field they guard (`embedding_store_ttl`, `state`), so a
 * violation can be reported as INVALID_ARGUMENT naming that field (database-errors.ts).
 *
 * Migrations are history: never edit a released one (its checksum is recorded), add the next number.
 * The value lists are written out here rather than taken from types.ts for the same reason; a test
 * checks that both agree.
 */
import type { Migration } from '../../platform/sql/index.js';

/** Records which of these migrations a database has applied. */
export const VSS_MIGRATIONS_TABLE = 'vss_schema_migrations';

const storesModelsVersions = `
CREATE TABLE vss_stores (
  store_id integer NOT NULL CONSTRAINT store_id CHECK (store_id > 0),
  entity text NOT NULL CONSTRAINT entity CHECK (entity ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  db_conf_id text NOT NULL CONSTRAINT db_conf_id CHECK (db_conf_id <> '' AND length(db_conf_id) <= 256),
  embeddings_table text NOT NULL CONSTRAINT embeddings_table
    CHECK (embeddings_table ~ '^[a-z][a-z0-9_]{0,62}$' AND embeddings_table !~ '^(vss|pg)_'),
  aggregator_table text NOT NULL CONSTRAINT aggregator_table
    CHECK (aggregator_table ~ '^[a-z][a-z0-9_]{0,62}$' AND aggregator_table !~ '^(vss|pg)_'
           AND aggregator_table <> embeddings_table),
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_stores_pkey PRIMARY KEY (store_id),
  CONSTRAINT vss_stores_entity_key UNIQUE (entity),
  CONSTRAINT vss_stores_embeddings_table_key UNIQUE (embeddings_table),
  CONSTRAINT vss_stores_aggregator_table_key UNIQUE (aggregator_table),
  -- what models reference, so that a model's store is one of its own entity
  CONSTRAINT vss_stores_store_entity_key UNIQUE (store_id, entity)
);

CREATE TABLE vss_models (
  entity text NOT NULL,
  model_name text NOT NULL CONSTRAINT model_name CHECK (model_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  store_id integer NOT NULL,
  ingestion_column_mapping jsonb NOT NULL CONSTRAINT ingestion_column_mapping CHECK (
    jsonb_typeof(ingestion_column_mapping) = 'object'
    AND jsonb_typeof(ingestion_column_mapping -> 'id_column') = 'string'
    AND jsonb_typeof(ingestion_column_mapping -> 'embedding_column') = 'string'
    AND jsonb_typeof(ingestion_column_mapping -> 'to_be_indexed_column') = 'string'
    AND coalesce(jsonb_typeof(ingestion_column_mapping -> 'search_embedding_column'), 'string') = 'string'
  ),
  embedding_store_enabled boolean NOT NULL,
  embedding_store_ttl integer NOT NULL CONSTRAINT embedding_store_ttl CHECK (embedding_store_ttl >= 0),
  mq_id integer NOT NULL CONSTRAINT mq_id CHECK (mq_id >= 0),
  model_config jsonb NOT NULL CONSTRAINT model_config CHECK (
    jsonb_typeof(model_config) = 'object'
    AND model_config ->> 'distance_function' IN ('DOT', 'COSINE', 'EUCLIDEAN')
    AND CASE
          WHEN jsonb_typeof(model_config -> 'vector_dimension') = 'number'
               AND model_config ->> 'vector_dimension' ~ '^[1-9][0-9]{0,4}$'
          THEN (model_config ->> 'vector_dimension')::integer <= 65536
          ELSE false
        END
  ),
  training_data_path text NOT NULL CONSTRAINT training_data_path CHECK (training_data_path <> ''),
  state text NOT NULL DEFAULT 'REGISTERED'
    CONSTRAINT state CHECK (state IN ('REGISTERED', 'INGESTING', 'INGESTED', 'FAILED')),
  failed_state text CONSTRAINT failed_state CHECK (
    (state = 'FAILED') = (failed_state IS NOT NULL)
    AND coalesce(failed_state IN ('REGISTERED', 'INGESTING', 'INGESTED'), true)
  ),
  failure_reason text CONSTRAINT failure_reason CHECK ((state = 'FAILED') = (failure_reason IS NOT NULL)),
  cluster text NOT NULL DEFAULT 'experiment' CONSTRAINT cluster CHECK (cluster IN ('experiment', 'production')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_models_pkey PRIMARY KEY (entity, model_name),
  CONSTRAINT vss_models_store_fkey FOREIGN KEY (store_id, entity) REFERENCES vss_stores (store_id, entity)
);

CREATE TABLE vss_versions (
  entity text NOT NULL,
  model_name text NOT NULL,
  version integer NOT NULL CONSTRAINT version CHECK (version > 0),
  status text NOT NULL DEFAULT 'INGESTING' CONSTRAINT status
    CHECK (status IN ('INGESTING', 'INGESTED', 'SERVING', 'RETIRED', 'DROPPED', 'FAILED')),
  failure_reason text CONSTRAINT failure_reason CHECK ((status = 'FAILED') = (failure_reason IS NOT NULL)),
  ingested_count bigint NOT NULL DEFAULT 0 CONSTRAINT ingested_count CHECK (ingested_count >= 0),
  failed_count bigint NOT NULL DEFAULT 0 CONSTRAINT failed_count CHECK (failed_count >= 0),
  indexed_count bigint CONSTRAINT indexed_count CHECK (indexed_count >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  ingested_at timestamptz CONSTRAINT ingested_at
    CHECK (status NOT IN ('INGESTED', 'SERVING', 'RETIRED') OR ingested_at IS NOT NULL),
  indexed_at timestamptz CONSTRAINT indexed_at CHECK (status <> 'SERVING' OR indexed_at IS NOT NULL),
  retired_at timestamptz CONSTRAINT retired_at CHECK (status NOT IN ('RETIRED', 'DROPPED') OR retired_at IS NOT NULL),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_versions_pkey PRIMARY KEY (entity, model_name, version),
  CONSTRAINT vss_versions_model_fkey FOREIGN KEY (entity, model_name) REFERENCES vss_models (entity, model_name)
);
`;

const variants = `
CREATE TABLE vss_variants (
  entity text NOT NULL,
  model_name text NOT NULL,
  -- part of the column name to_be_indexed_<variant> (at most 63 bytes in all)
  variant text NOT NULL CONSTRAINT variant CHECK (variant ~ '^[a-z][a-z0-9_]{0,48}$'),
  vss_filter jsonb NOT NULL CONSTRAINT vss_filter CHECK (jsonb_typeof(vss_filter) = 'object'),
  vectordb_type text NOT NULL CONSTRAINT vectordb_type CHECK (vectordb_type IN ('EMBEDDED', 'QDRANT')),
  vectordb_config jsonb NOT NULL CONSTRAINT vectordb_config CHECK (jsonb_typeof(vectordb_config) = 'object'),
  job_frequency text NOT NULL CONSTRAINT job_frequency
    CHECK (job_frequency IN ('FREQ_1H', 'FREQ_3H', 'FREQ_6H', 'FREQ_1D', 'FREQ_1W')),
  state text NOT NULL DEFAULT 'REGISTERED' CONSTRAINT state
    CHECK (state IN ('REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY', 'FAILED')),
  failed_state text CONSTRAINT failed_state CHECK (
    (state = 'FAILED') = (failed_state IS NOT NULL)
    AND coalesce(failed_state IN ('REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY'), true)
  ),
  failure_reason text CONSTRAINT failure_reason CHECK ((state = 'FAILED') = (failure_reason IS NOT NULL)),
  read_version integer,
  write_version integer,
  cluster text NOT NULL DEFAULT 'experiment' CONSTRAINT cluster CHECK (cluster IN ('experiment', 'production')),
  memory_cache_ttl integer NOT NULL DEFAULT 60 CONSTRAINT memory_cache_ttl CHECK (memory_cache_ttl >= 0),
  distributed_cache_ttl integer NOT NULL DEFAULT 300
    CONSTRAINT distributed_cache_ttl CHECK (distributed_cache_ttl >= 0),
  cache_ttl_jitter real NOT NULL DEFAULT 0.1
    CONSTRAINT cache_ttl_jitter CHECK (cache_ttl_jitter >= 0 AND cache_ttl_jitter <= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- never read a version newer than the one written; READY serves the version it wrote
  CONSTRAINT read_version CHECK (
    (read_version IS NULL OR (write_version IS NOT NULL AND read_version <= write_version))
    AND (state <> 'READY' OR (read_version IS NOT NULL AND read_version = write_version))
  ),
  CONSTRAINT vss_variants_pkey PRIMARY KEY (entity, model_name, variant),
  CONSTRAINT vss_variants_model_fkey FOREIGN KEY (entity, model_name) REFERENCES vss_models (entity, model_name),
  CONSTRAINT vss_variants_read_version_fkey FOREIGN KEY (entity, model_name, read_version)
    REFERENCES vss_versions (entity, model_name, version),
  CONSTRAINT vss_variants_write_version_fkey FOREIGN KEY (entity, model_name, write_version)
    REFERENCES vss_versions (entity, model_name, version)
);
`;

const operations = `
CREATE TABLE vss_operations (
  operation_id text NOT NULL CONSTRAINT operation_id CHECK (operation_id ~ '^[A-Za-z0-9_-]{1,64}$'),
  kind text NOT NULL CONSTRAINT kind
    CHECK (kind IN ('RESET_MODEL', 'TRIGGER_MODEL_MACHINE', 'PROMOTE_MODEL', 'PROMOTE_VARIANT')),
  entity text NOT NULL,
  model_name text NOT NULL,
  variant text CONSTRAINT variant
    CHECK ((kind IN ('TRIGGER_MODEL_MACHINE', 'PROMOTE_VARIANT')) = (variant IS NOT NULL)),
  payload jsonb NOT NULL DEFAULT '{}' CONSTRAINT payload CHECK (jsonb_typeof(payload) = 'object'),
  result jsonb CONSTRAINT result CHECK (result IS NULL OR jsonb_typeof(result) = 'object'),
  status text NOT NULL DEFAULT 'PENDING' CONSTRAINT status
    CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED')),
  step text CONSTRAINT step CHECK (step <> '' AND length(step) <= 128),
  progress real NOT NULL DEFAULT 0 CONSTRAINT progress CHECK (progress >= 0 AND progress <= 1),
  attempts integer NOT NULL DEFAULT 0 CONSTRAINT attempts CHECK (attempts >= 0),
  last_error text CONSTRAINT last_error CHECK (status <> 'FAILED' OR last_error IS NOT NULL),
  idempotency_key text CONSTRAINT idempotency_key
    CHECK (idempotency_key <> '' AND length(idempotency_key) <= 256),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz CONSTRAINT started_at CHECK (status = 'PENDING' OR started_at IS NOT NULL),
  finished_at timestamptz CONSTRAINT finished_at
    CHECK ((status IN ('SUCCEEDED', 'FAILED')) = (finished_at IS NOT NULL)),
  CONSTRAINT vss_operations_pkey PRIMARY KEY (operation_id),
  CONSTRAINT vss_operations_idempotency_key_key UNIQUE (idempotency_key),
  CONSTRAINT vss_operations_model_fkey FOREIGN KEY (entity, model_name)
    REFERENCES vss_models (entity, model_name),
  CONSTRAINT vss_operations_variant_fkey FOREIGN KEY (entity, model_name, variant)
    REFERENCES vss_variants (entity, model_name, variant)
);

-- at most one unfinished operation of a kind per model (or variant): a second reset waits its turn
CREATE UNIQUE INDEX vss_operations_one_active
  ON vss_operations (kind, entity, model_name, coalesce(variant, ''))
  WHERE status IN ('PENDING', 'RUNNING');

CREATE INDEX vss_operations_unfinished ON vss_operations (created_at) WHERE status IN ('PENDING', 'RUNNING');
CREATE INDEX vss_operations_model ON vss_operations (entity, model_name, created_at);
`;

/** The channel every change of the serving configuration (stores, models, variants, versions) is notified on. */
export const VSS_CONFIG_CHANNEL = 'vss_config';

/**
 * Serving replicas LISTEN on vss_config instead of each polling every second: any committed change to
 * what they cache notifies it once per statement (the payload names the table).
 */
const configNotifications = `
CREATE FUNCTION vss_notify_config() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('${VSS_CONFIG_CHANNEL}', TG_TABLE_NAME);
  RETURN NULL;
END
$$;

CREATE TRIGGER vss_stores_notify AFTER INSERT OR UPDATE OR DELETE ON vss_stores
  FOR EACH STATEMENT EXECUTE FUNCTION vss_notify_config();
CREATE TRIGGER vss_models_notify AFTER INSERT OR UPDATE OR DELETE ON vss_models
  FOR EACH STATEMENT EXECUTE FUNCTION vss_notify_config();
CREATE TRIGGER vss_variants_notify AFTER INSERT OR UPDATE OR DELETE ON vss_variants
  FOR EACH STATEMENT EXECUTE FUNCTION vss_notify_config();
CREATE TRIGGER vss_versions_notify AFTER INSERT OR UPDATE OR DELETE ON vss_versions
  FOR EACH STATEMENT EXECUTE FUNCTION vss_notify_config();
`;

/**
 * Ingestion bookkeeping of the consumers (ingestion-repository.ts). `vss_ingestion_events` is the
 * ledger that makes the counts exact under redelivery: one row per distinct embedding event of a
 * version (keyed by a hash of its bytes, so a redelivered event finds its row again), claimed by the
 * job whose completion counts it. `vss_ingestion_markers` holds each partition's EOF marker once;
 * `vss_ingestion_jobs` completes when every partition has one, with the counts, exactly once.
 */
const ingestion = `
CREATE TABLE vss_ingestion_jobs (
  entity text NOT NULL,
  model_name text NOT NULL,
  version integer NOT NULL CONSTRAINT version CHECK (version > 0),
  job_id text NOT NULL CONSTRAINT job_id CHECK (job_id <> '' AND length(job_id) <= 256),
  partitions integer NOT NULL CONSTRAINT partitions CHECK (partitions > 0),
  status text NOT NULL DEFAULT 'INGESTING' CONSTRAINT status CHECK (status IN ('INGESTING', 'COMPLETE')),
  events bigint CONSTRAINT events CHECK (events >= 0),
  rejected bigint CONSTRAINT rejected CHECK (rejected >= 0 AND rejected <= events),
  points_written bigint CONSTRAINT points_written CHECK (points_written >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  -- the counts are known exactly when the job is complete, and only then
  CONSTRAINT completed CHECK (
    (status = 'COMPLETE') = (completed_at IS NOT NULL)
    AND (status = 'COMPLETE') = (events IS NOT NULL AND rejected IS NOT NULL AND points_written IS NOT NULL)
  ),
  CONSTRAINT vss_ingestion_jobs_pkey PRIMARY KEY (entity, model_name, version, job_id),
  CONSTRAINT vss_ingestion_jobs_model_fkey FOREIGN KEY (entity, model_name)
    REFERENCES vss_models (entity, model_name)
);

CREATE INDEX vss_ingestion_jobs_version ON vss_ingestion_jobs (entity, model_name, version, created_at);

CREATE TABLE vss_ingestion_markers (
  entity text NOT NULL,
  model_name text NOT NULL,
  version integer NOT NULL,
  job_id text NOT NULL,
  partition integer NOT NULL CONSTRAINT partition CHECK (partition >= 0),
  received_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_ingestion_markers_pkey PRIMARY KEY (entity, model_name, version, job_id, partition),
  CONSTRAINT vss_ingestion_markers_job_fkey FOREIGN KEY (entity, model_name, version, job_id)
    REFERENCES vss_ingestion_jobs (entity, model_name, version, job_id) ON DELETE CASCADE
);

-- No foreign key to the models: an event for an unknown model is rejected, and counted too.
CREATE TABLE vss_ingestion_events (
  entity text NOT NULL,
  model_name text NOT NULL,
  version integer NOT NULL,
  event_key text NOT NULL CONSTRAINT event_key CHECK (event_key ~ '^[0-9a-f]{32}$'),
  -- the event's own job_id, else the job whose completion claimed it (NULL until then)
  job_id text CONSTRAINT job_id CHECK (job_id <> '' AND length(job_id) <= 256),
  rejected boolean NOT NULL,
  points integer NOT NULL CONSTRAINT points CHECK (points >= 0),
  recorded_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_ingestion_events_pkey PRIMARY KEY (entity, model_name, version, event_key)
);

CREATE INDEX vss_ingestion_events_job ON vss_ingestion_events (entity, model_name, version, job_id);
`;

/**
 * Embeddings tables hold vectors as float32 little-endian `bytea` rather than `real[]` (parsing the
 * text of every value made ingestion slow: vector-bytes.ts). The tables of registered stores are
 * converted bit for bit (`float4send` gives each value's bytes, big-endian); the function stays for
 * EntityTables, which converts a `real[]` table it adopts the same way.
 */
const vectorsAsBytes = `
CREATE FUNCTION vss_float4_bytes(v real[]) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT coalesce(string_agg(substr(b, 4, 1) || substr(b, 3, 1) || substr(b, 2, 1) || substr(b, 1, 1),
                             ''::bytea ORDER BY o), ''::bytea)
    FROM unnest(v) WITH ORDINALITY AS u(x, o), float4send(x) AS b
$$;

CREATE FUNCTION vss_embeddings_as_bytea(t regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  changes text;
BEGIN
  SELECT string_agg(format('ALTER COLUMN %I TYPE bytea USING vss_float4_bytes(%I)', attname, attname), ', ')
    INTO changes
    FROM pg_attribute
   WHERE attrelid = t AND attname IN ('embedding', 'search_embedding') AND NOT attisdropped
     AND atttypid = 'real[]'::regtype;
  IF changes IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %s %s', t, changes);
  END IF;
END
$$;

DO $$
DECLARE
  t regclass;
BEGIN
  FOR t IN SELECT to_regclass(quote_ident(embeddings_table)) FROM vss_stores ORDER BY store_id LOOP
    IF t IS NOT NULL THEN
      PERFORM vss_embeddings_as_bytea(t);
    END IF;
  END LOOP;
END
$$;
`;

/**
 * The ledger takes a row per embedding event, as many as the embeddings tables: its key becomes a
 * 16-byte uuid (the same 32 hex digits, validated by the type instead of a pattern) and leads the
 * primary key, so that most comparisons of an insert end at the first column. Queries by version
 * and job use vss_ingestion_events_job.
 */
const compactLedgerKey = `
ALTER TABLE vss_ingestion_events DROP CONSTRAINT vss_ingestion_events_pkey, DROP CONSTRAINT event_key;
ALTER TABLE vss_ingestion_events ALTER COLUMN event_key TYPE uuid USING event_key::uuid;
ALTER TABLE vss_ingestion_events
  ADD CONSTRAINT vss_ingestion_events_pkey PRIMARY KEY (event_key, entity, model_name, version);
`;

/**
 * vss admin: the transactional outbox (an operation's queue event is written in the transaction that
 * records the operation; a relay publishes it and marks it published), the responses remembered per
 * `Idempotency-Key` so any POST is safe to retry, and two more operation kinds: DELTA_MODEL (a
 * scheduled delta load into the current version) and FILL_VARIANT (a variant registered on a model
 * that already has data gets its membership from the embedding store, without re-ingesting).
 */
const adminOutbox = `
CREATE TABLE vss_outbox (
  outbox_id bigserial PRIMARY KEY,
  topic text NOT NULL CONSTRAINT topic CHECK (topic <> '' AND length(topic) <= 256),
  message_key text NOT NULL CONSTRAINT message_key CHECK (length(message_key) <= 256),
  payload jsonb NOT NULL CONSTRAINT payload CHECK (jsonb_typeof(payload) = 'object'),
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX vss_outbox_unpublished ON vss_outbox (outbox_id) WHERE published_at IS NULL;

CREATE TABLE vss_admin_requests (
  idempotency_key text NOT NULL CONSTRAINT idempotency_key
    CHECK (idempotency_key <> '' AND length(idempotency_key) <= 256),
  method text NOT NULL,
  path text NOT NULL,
  body_sha256 text NOT NULL,
  status_code integer NOT NULL,
  response jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_admin_requests_pkey PRIMARY KEY (idempotency_key)
);

ALTER TABLE vss_operations DROP CONSTRAINT kind, DROP CONSTRAINT variant;
ALTER TABLE vss_operations ADD CONSTRAINT kind CHECK (kind IN (
  'RESET_MODEL', 'DELTA_MODEL', 'TRIGGER_MODEL_MACHINE', 'FILL_VARIANT', 'PROMOTE_MODEL', 'PROMOTE_VARIANT'));
ALTER TABLE vss_operations ADD CONSTRAINT variant
  CHECK ((kind IN ('TRIGGER_MODEL_MACHINE', 'FILL_VARIANT', 'PROMOTE_VARIANT')) = (variant IS NOT NULL));
`;

/**
 * The ledger takes a row per recorded batch instead of a row per event: the batch's event keys,
 * outcomes and point counts as three arrays, in the order they were recorded (`batch_seq`). A row
 * per event cost PGlite about 11 µs per event of the consumers' ~28 (an insert into a B-tree of all
 * the version's keys; bench/RESULTS.md, "vss-ingest"), the largest share after the embedding row
 * itself; one row of arrays per batch costs a fraction of it. What a row per event gave, the
 * completion now derives once per job (ingestion-repository.ts): an event counts once however often
 * it was recorded, with the outcome it was last recorded with, and belongs to the job of the first
 * batch that recorded it. The rows of the old ledger move over as one batch per version and job.
 */
const ledgerByBatch = `
CREATE TABLE vss_ingestion_batches (
  entity text NOT NULL,
  model_name text NOT NULL,
  version integer NOT NULL,
  batch_seq bigint GENERATED ALWAYS AS IDENTITY,
  -- the events' own job_id, else the job whose completion claimed the batch (NULL until then)
  job_id text CONSTRAINT job_id CHECK (job_id <> '' AND length(job_id) <= 256),
  event_keys uuid[] NOT NULL,
  rejected boolean[] NOT NULL,
  points integer[] NOT NULL CONSTRAINT points CHECK (0 <= ALL (points)),
  recorded_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT lengths CHECK (
    cardinality(rejected) = cardinality(event_keys) AND cardinality(points) = cardinality(event_keys)),
  CONSTRAINT vss_ingestion_batches_pkey PRIMARY KEY (entity, model_name, version, batch_seq)
);

INSERT INTO vss_ingestion_batches (entity, model_name, version, job_id, event_keys, rejected, points)
  SELECT entity, model_name, version, job_id,
         array_agg(event_key ORDER BY event_key), array_agg(rejected ORDER BY event_key),
         array_agg(points ORDER BY event_key)
    FROM vss_ingestion_events
   GROUP BY entity, model_name, version, job_id;

DROP TABLE vss_ingestion_events;
`;

/**
 * A model's state is its variants' as a whole, so it takes their INDEXING and READY too (a model
 * stayed INGESTED while every variant was READY). Models whose variants are all READY become READY.
 * A READY variant may write a newer version than it serves (that of a failed operation).
 */
const modelStatesOfVariants = `
ALTER TABLE vss_models DROP CONSTRAINT state, DROP CONSTRAINT failed_state;
ALTER TABLE vss_models ADD CONSTRAINT state
  CHECK (state IN ('REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY', 'FAILED'));
ALTER TABLE vss_models ADD CONSTRAINT failed_state CHECK (
  (state = 'FAILED') = (failed_state IS NOT NULL)
  AND coalesce(failed_state IN ('REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY'), true)
);
-- A variant that serves a version stays READY when an operation writing a newer one fails: it keeps
-- that write version (the consumers accept its events until the operation is retried or superseded).
ALTER TABLE vss_variants DROP CONSTRAINT read_version;
ALTER TABLE vss_variants ADD CONSTRAINT read_version CHECK (
  (read_version IS NULL OR (write_version IS NOT NULL AND read_version <= write_version))
  AND (state <> 'READY' OR read_version IS NOT NULL)
);
UPDATE vss_models m SET state = 'READY', updated_at = now()
 WHERE m.state = 'INGESTED'
   AND EXISTS (SELECT 1 FROM vss_variants v WHERE v.entity = m.entity AND v.model_name = m.model_name)
   AND NOT EXISTS (
     SELECT 1 FROM vss_variants v
      WHERE v.entity = m.entity AND v.model_name = m.model_name AND v.state <> 'READY');
`;

/**
 * The built-in job runner's records (src/vss/admin/jobs/sql-job-state-store.ts), so admin replicas
 * sharing the database see each other's jobs: one row per job id, claimed by one runner (`owner`)
 * and rewritten by it at least every third of a lease. `heartbeat_at` is the database's clock only.
 */
const jobRecords = `
CREATE TABLE vss_job_records (
  job_id text NOT NULL CONSTRAINT job_id CHECK (job_id <> '' AND length(job_id) <= 256),
  -- a digest of the job's parameters: the same id with others is another job, never taken over
  fingerprint text NOT NULL CONSTRAINT fingerprint CHECK (fingerprint <> ''),
  state text NOT NULL CONSTRAINT state CHECK (state IN ('RUNNING', 'SUCCEEDED', 'FAILED')),
  owner text NOT NULL CONSTRAINT owner CHECK (owner <> ''),
  status jsonb NOT NULL CONSTRAINT status CHECK (jsonb_typeof(status) = 'object'),
  checkpoint jsonb CONSTRAINT checkpoint CHECK (jsonb_typeof(checkpoint) = 'object'),
  job jsonb CONSTRAINT job CHECK (jsonb_typeof(job) = 'object'),
  heartbeat_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT vss_job_records_pkey PRIMARY KEY (job_id)
);
`;

/** Variants on the pgvector adapter (src/platform/vectordb/pgvector/). */
const pgvectorType = `
ALTER TABLE vss_variants DROP CONSTRAINT vectordb_type;
ALTER TABLE vss_variants ADD CONSTRAINT vectordb_type CHECK (vectordb_type IN ('EMBEDDED', 'QDRANT', 'PGVECTOR'));
`;

/**
 * A variant's search width, changed live by POST /update-variant: the registration (vectordb_config)
 * stays as registered, so registering the same body again still answers 200.
 */
const variantSearchWidth = `
ALTER TABLE vss_variants ADD COLUMN ef_search integer
  CONSTRAINT ef_search CHECK (ef_search IS NULL OR ef_search BETWEEN 1 AND 4096);
`;

/**
 * Recall-gated flips with rollback (docs/vss.md "Recall gate and rollback"): each variant's
 * `min_recall` (the gate a reset's new version must pass before it is served), the version it read
 * before its last flip (`previous_read_version`: where a rollback goes back to), and on each version
 * the recall figures the gate measured (`recall`) and when a rollback took it out of service
 * (`rolled_back_at`).
 */
const recallGate = `
ALTER TABLE vss_variants ADD COLUMN min_recall double precision NOT NULL DEFAULT 0.95
  CONSTRAINT min_recall CHECK (min_recall >= 0 AND min_recall <= 1);
ALTER TABLE vss_variants ADD COLUMN previous_read_version integer
  CONSTRAINT previous_read_version CHECK (previous_read_version IS NULL OR previous_read_version >= 1);
ALTER TABLE vss_versions ADD COLUMN recall jsonb
  CONSTRAINT recall CHECK (recall IS NULL OR jsonb_typeof(recall) = 'object');
ALTER TABLE vss_versions ADD COLUMN rolled_back_at timestamptz;
`;

/**
 * Live recall samples (serving's `vss_avg_recall` measurements, one row each, with the version they
 * were measured on), so the admin's automatic rollback reads them whatever process served the query
 * (docs/vss.md "Recall gate and rollback"). Kept a day: the admin's sweep prunes older rows.
 */
const liveRecall = `
CREATE TABLE vss_live_recall (
  entity text NOT NULL,
  model_name text NOT NULL,
  variant text NOT NULL,
  version integer NOT NULL CONSTRAINT version CHECK (version > 0),
  recall real NOT NULL CONSTRAINT recall CHECK (recall >= 0 AND recall <= 1),
  measured_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vss_live_recall_window ON vss_live_recall (entity, model_name, variant, version, measured_at);
CREATE INDEX vss_live_recall_age ON vss_live_recall (measured_at);
`;

export const vssMigrations: readonly Migration[] = [
  { version: 1, name: 'stores, models and versions', up: storesModelsVersions },
  { version: 2, name: 'variants', up: variants },
  { version: 3, name: 'operations', up: operations },
  { version: 4, name: 'configuration change notifications', up: configNotifications },
  { version: 5, name: 'ingestion jobs, EOF markers and the event ledger', up: ingestion },
  { version: 6, name: 'embeddings tables store vectors as float32 bytea', up: vectorsAsBytes },
  { version: 7, name: 'ingestion ledger keyed by a uuid first', up: compactLedgerKey },
  { version: 8, name: 'admin outbox, idempotent requests, delta and fill operations', up: adminOutbox },
  { version: 9, name: 'ingestion ledger of batches', up: ledgerByBatch },
  {
    version: 10,
    name: 'model states follow their variants; READY variants keep a failed write version',
    up: modelStatesOfVariants,
  },
  { version: 11, name: 'job records of the built-in job runner', up: jobRecords },
  { version: 12, name: 'variants on pgvector', up: pgvectorType },
  { version: 13, name: "a variant's live search width", up: variantSearchWidth },
  { version: 14, name: 'recall-gated flips: min_recall, recall figures, rollback', up: recallGate },
  { version: 15, name: 'live recall samples', up: liveRecall },
];
