import { z } from 'zod';
import { type AdmissionClassLimits, DEFAULT_ADMISSION } from '../grpc/admission.js';

/**
 * The settings every Lattice process reads once at start-up. Defaults make `npm start` work on a
 * bare machine (embedded adapters, data under `.lattice/`); the distributed adapters are chosen by
 * setting a port's `kind`, never by code changes.
 */
const port = z.number().int().min(0).max(65535);
const logLevel = z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);
const url = z.string().min(1);

/**
 * PGlite's buffer pool by default: 16 MB instead of PostgreSQL's 128 MB, which a first start's demo
 * ingestion fills and then keeps resident (fresh `lattice up` 786 -> 634 MB RSS, 2026-11-25).
 */
const SHARED_BUFFERS_MB = 16;
/** A queue topic or group name (letters, digits, "_" and "-"; see the Queue port). */
/** One admission class of every gRPC server (src/platform/grpc/admission.ts). */
const admissionClass = (defaults: AdmissionClassLimits) =>
  z
    .object({
      /** Handlers of the class running at once, per server. */
      concurrency: z.number().int().min(1).max(100_000).default(defaults.concurrency),
      /** Calls waiting for a slot; past it new calls get RESOURCE_EXHAUSTED at once (0: no queue). */
      queue: z.number().int().min(0).max(100_000).default(defaults.queue),
      /** A call still queued after this long gets RESOURCE_EXHAUSTED; short, well under client deadlines. */
      queueTimeoutMs: z
        .number()
        .int()
        .min(1)
        .max(10_000, 'must be at most 10000: a queue deadline is meant to be short')
        .default(defaults.queueTimeoutMs),
    })
    .strict()
    .prefault({});

const queueName = z.string().regex(/^[A-Za-z0-9_-]{1,120}$/, 'must be 1-120 letters, digits, "_" or "-"');

/**
 * A vector database of a named cluster, in the shape of `vss.vectorDb`: embedded (a snapshot
 * directory), a Qdrant server, or pgvector on the platform's SQL database (`sql`: PostgreSQL with the
 * extension, or PGlite, which loads it; the two clusters keep apart by table prefix). `urlEnv` names
 * the variable that sets the URL, for the message when it is missing.
 */
function vectorDbSettings(urlEnv: string) {
  return z
    .object({
      kind: z.enum(['embedded', 'qdrant', 'pgvector']).default('embedded'),
      /** embedded: snapshot directory (default under `dataDir`). */
      dir: z.string().min(1).optional(),
      /**
       * embedded: threads a large graph build may use while the process neither writes nor searches
       * (default: every core Node reports; set it to the container's CPU limit).
       */
      buildThreads: z.number().int().min(1).max(256).optional(),
      /**
       * embedded: threads of the process's graph search pool, which both clusters share (the
       * first opened sizes it; default: one per core Node reports; set it to the container's CPU
       * limit); 0 walks this cluster's graphs on the event loop, one search at a time.
       */
      searchThreads: z.number().int().min(0).max(256).optional(),
      /** qdrant: REST URL, e.g. `http://qdrant:6333`. */
      url: url.optional(),
      /** qdrant: API key, when the server requires one. */
      apiKey: z.string().min(1).optional(),
      /** qdrant: per-request timeout. */
      timeoutMs: z.number().int().positive().default(5000),
    })
    .strict()
    .superRefine((vectorDb, ctx) => {
      if (vectorDb.kind === 'qdrant' && vectorDb.url === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['url'],
          message: `is required when the vector database is qdrant (${urlEnv})`,
        });
      }
    })
    .prefault({});
}

export const settingsSchema = z
  .object({
    /** Where embedded adapters keep their files. */
    dataDir: z.string().min(1).default('.lattice'),
    /** Address every server binds to. */
    host: z.string().min(1).default('127.0.0.1'),
    logLevel: logLevel.default('info'),
    configStore: z
      .object({
        kind: z.enum(['file', 'etcd']).default('file'),
        /** file: the watched directory; default `<dataDir>/config`. */
        dir: z.string().min(1).optional(),
        /** etcd: client endpoints. */
        endpoints: z.array(url).min(1).default(['http://127.0.0.1:2379']),
        /** etcd: every key is stored under this prefix. */
        prefix: z.string().default('/lattice/'),
        dialTimeoutMs: z.number().int().positive().default(3000),
      })
      .strict()
      .prefault({}),
    queue: z
      .object({
        kind: z.enum(['memory', 'jetstream']).default('memory'),
        /** memory: journal directory so a crash loses nothing; default `<dataDir>/queue`; '' disables it. */
        journalDir: z.string().optional(),
        /** jetstream: NATS server URLs. */
        servers: z.array(url).min(1).default(['nats://127.0.0.1:4222']),
        connectTimeoutMs: z.number().int().positive().default(3000),
      })
      .strict()
      .prefault({}),
    sql: z
      .object({
        kind: z.enum(['pglite', 'postgres']).default('pglite'),
        /** pglite: data directory; default `<dataDir>/sql`. */
        dataDir: z.string().optional(),
        /**
         * pglite: PostgreSQL's `shared_buffers`, in MB. Its buffer pool stays resident once filled
         * (WebAssembly memory never shrinks); the data files sit in the OS page cache beneath it.
         */
        sharedBuffersMb: z.number().int().min(1).max(4096).default(SHARED_BUFFERS_MB),
        /** postgres: connection URL. */
        url: url.default('postgres://postgres@127.0.0.1:5432/lattice'),
        /**
         * postgres: the schema Lattice's tables live in (the connection's search_path), so several
         * deployments can share one database; default the database's own (`public`).
         */
        schema: z
          .string()
          .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
          .optional(),
        poolSize: z.number().int().positive().default(10),
        connectTimeoutMs: z.number().int().positive().default(3000),
        /**
         * Bound on every statement, migrations included. PostgreSQL cancels the statement
         * (`statement_timeout`); PGlite cannot interrupt one, so its caller stops waiting instead.
         */
        statementTimeoutMs: z.number().int().positive().default(30_000),
      })
      .strict()
      .prefault({}),
    cache: z
      .object({
        kind: z.enum(['memory', 'redis']).default('memory'),
        /** memory: size bound of the LRU, in bytes. */
        maxBytes: z
          .number()
          .int()
          .positive()
          .default(256 * 1024 * 1024),
        /** redis: connection URL. */
        url: url.default('redis://127.0.0.1:6379'),
        keyPrefix: z.string().default('lattice:'),
        connectTimeoutMs: z.number().int().positive().default(2000),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        /** Port of the HTTP ops server (/metrics, /healthz, /readyz); 0 picks a free one. */
        port: port.default(9464),
        /** StatsD is sent only when a host is set. */
        statsdHost: z.string().optional(),
        statsdPort: port.default(8125),
        statsdPrefix: z.string().default('lattice.'),
        /** How tags are written: DogStatsD (`|#k:v`), Telegraf (`,k=v`) or dropped for plain StatsD. */
        statsdTags: z.enum(['datadog', 'telegraf', 'none']).default('datadog'),
        /** Bound on each /readyz check: a dependency that has not answered by then is reported as timed out. */
        readyTimeoutMs: z.number().int().positive().default(2000),
      })
      .strict()
      .prefault({}),
    auth: z
      .object({
        /** Caller id → token. When empty, caller auth is off. */
        callerTokens: z.record(z.string().min(1), z.string().min(1)).default({}),
        callerIdHeader: z.string().min(1).default('caller-id'),
        callerTokenHeader: z.string().min(1).default('caller-token'),
        /**
         * The identity the CLI's gRPC clients (`lattice predict`, `lattice search`) send (their flags
         * win), and the one the orchestrator's retrieval stages send to vss serving.
         */
        callerId: z.string().min(1).optional(),
        callerToken: z.string().min(1).optional(),
        /** Start servers bound to a non-loopback host even where they have no auth (src/cli/exposure.ts). */
        allowUnauthenticated: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    orchestrator: z
      .object({
        port: port.default(50051),
        /**
         * The feature store the orchestrator's feature components call (`host:port`). Unset: this
         * stack's own, `<host>:<featurestore.port>` (in `lattice up`, the port it actually bound).
         */
        featureStoreTarget: z.string().min(1).optional(),
        /** Identity sent to the feature store as caller-id / caller-token metadata. */
        featureStoreCallerId: z.string().default('lattice-orchestrator'),
        featureStoreCallerToken: z.string().default(''),
        /** Queue topic the inference logs are published on. */
        logTopic: z.string().min(1).default('orchestrator-inference-logs'),
        /**
         * Retention of the log topic, applied to an existing topic too: records older than this, or
         * past `logTopicMaxBytes` (oldest first), are discarded whether or not a consumer read them.
         */
        logTopicRetentionMs: z.number().int().positive().default(3_600_000),
        logTopicMaxBytes: z
          .number()
          .int()
          .min(1024 * 1024)
          .default(64 * 1024 * 1024),
        /** Bound on the bytes of the requests waiting in the inference log buffer (besides its 1000 entries). */
        logBufferMaxBytes: z
          .number()
          .int()
          .positive()
          .default(32 * 1024 * 1024),
        /**
         * HTTP/2 connections per downstream endpoint (feature store, model server, numerix). One
         * multiplexes every call and costs least per call; raise it for servers that cap concurrent
         * streams per connection or serve each connection on one thread.
         */
        channelsPerTarget: z.number().int().min(1).max(64).default(1),
        /**
         * Bytes of request matrices alive at once across all requests; past it a new request gets
         * RESOURCE_EXHAUSTED (one request alone is always admitted, within max_matrix_bytes).
         */
        maxInFlightMatrixBytes: z
          .number()
          .int()
          .positive()
          .default(1024 * 1024 * 1024),
        /**
         * Calls in flight from this process to one downstream endpoint (model server, feature store,
         * compute), shared fairly between requests: a small request's call waits for a free slot, not
         * behind every batch of a large one. Raise it for an endpoint that is many replicas.
         */
        maxInFlightPerEndpoint: z.number().int().min(1).max(4096).default(16),
        /**
         * Shadow configs (docs/orchestrator.md "Shadow configs"): mirrored requests waiting for a
         * shadow slot (past it they are dropped and counted, never waited for), shadow executions at
         * once, and each one's deadline.
         */
        shadowQueueSize: z.number().int().min(0).max(100_000).default(100),
        shadowConcurrency: z.number().int().min(1).max(256).default(2),
        shadowDeadlineMs: z.number().int().positive().max(600_000).default(1000),
      })
      .strict()
      .prefault({}),
    featurestore: z
      .object({
        port: port.default(50052),
        /** Registry file (JSON/YAML); without it the seeded demo registry and rows are served. */
        registry: z.string().optional(),
      })
      .strict()
      .prefault({}),
    modelserver: z
      .object({
        port: port.default(8001),
        /** Model repository (`<repository>/<model>/<version>/model.onnx`); default `<dataDir>/models`. */
        repository: z.string().optional(),
      })
      .strict()
      .prefault({}),
    compute: z
      .object({ port: port.default(50053) })
      .strict()
      .prefault({}),
    vss: z
      .object({
        /** Port of `vss.v1.SimilaritySearch` (lattice vss serving, and in lattice up). */
        servingPort: port.default(50055),
        /**
         * Key that signs page tokens; replicas behind one address must share it. Unset: a random key
         * per process, so a token is valid only on the replica that issued it.
         */
        pageTokenSecret: z.string().min(16, 'must be at least 16 characters').optional(),
        /** Share of served queries re-run exactly to measure `avg_recall` (0 turns it off). */
        recallSampleRate: z.number().min(0).max(1).default(0.01),
        /** The consumers of the vss queue topics (src/vss/consumers/consumer-runner.ts). */
        consumers: z
          .object({
            /** Topic of embedding events and EOF markers. */
            embeddingsTopic: queueName.default('vss-embeddings'),
            /** Topic of real-time attribute events. */
            realtimeTopic: queueName.default('vss-realtime'),
            /** Durable consumer group of the vss consumers on both topics. */
            group: queueName.default('vss-consumers'),
            /** Partitions of each vss topic when it is created (fixed afterwards). */
            partitions: z.number().int().min(1).max(1024).default(8),
            /** Most events applied in one batch. */
            batchSize: z.number().int().min(1).max(5000).default(256),
            /** Longest wait for a batch to fill after its first event arrived, ms. */
            lingerMs: z.number().int().min(0).max(60_000).default(20),
            /** Attempts at a batch whose apply fails (the first included) before dead-lettering. */
            retryAttempts: z.number().int().min(1).max(100).default(8),
            /** Backoff after the first failed attempt, ms; doubles per attempt, with jitter. */
            retryBaseMs: z.number().int().min(1).default(500),
            /** Cap on the backoff between attempts, ms. */
            retryMaxMs: z.number().int().min(1).default(30_000),
            /**
             * How long a delivered message may stay unsettled before the queue hands it out again
             * (the topics' ack wait, set when the consumers start): what a crashed consumer held
             * comes back after this. Live consumers report progress well within it.
             */
            ackWaitMs: z.number().int().min(1000).max(3_600_000).default(30_000),
          })
          .strict()
          .refine((c) => c.retryMaxMs >= c.retryBaseMs, {
            path: ['retryMaxMs'],
            message: 'must be at least retryBaseMs',
          })
          .prefault({}),
        /** vss admin: the model lifecycle over HTTP (src/vss/admin/). */
        admin: z
          .object({
            /** Port of the admin HTTP API (lattice vss admin, and in lattice vss / lattice up). */
            port: port.default(8090),
            /**
             * API keys accepted as `Authorization: Bearer <key>`; empty (the embedded default) turns
             * auth off. Several keys let one be rotated without downtime.
             */
            apiKeys: z.array(z.string().min(16, 'must be at least 16 characters')).default([]),
            /** Directories `training_data_path` may name (symlinks and `..` resolved); default the data directory and the model repository. */
            trainingDataRoots: z.array(z.string().min(1)).min(1).optional(),
            /** Topic the outbox relay publishes operation events to; the admin consumers read it. */
            operationsTopic: queueName.default('vss-admin-operations'),
            /** Durable consumer group of the admin consumers. */
            group: queueName.default('vss-admin'),
            /** How often waiting steps (ingestion, indexing) are polled, and the outbox relayed, ms. */
            pollIntervalMs: z.number().int().min(10).max(60_000).default(1000),
            /** How often due `job_frequency` schedules are checked, ms (one replica fires: SQL advisory lock). */
            scheduleIntervalMs: z.number().int().min(1000).max(3_600_000).default(60_000),
            /**
             * The reset's recall gate (verify_recall, docs/vss.md "Recall gate and rollback"): stored
             * vectors of the new version sampled as queries, and the k of recall@k.
             */
            recallSampleSize: z.number().int().min(1).max(10_000).default(200),
            recallK: z.number().int().min(1).max(1000).default(10),
            /**
             * How long a version is kept after its variants flipped away from it, ms: rollback-model
             * can serve it again until then; then it is dropped. 0: no rollback (dropped at once).
             */
            rollbackGraceMs: z
              .number()
              .int()
              .min(0)
              .max(30 * 86_400_000)
              .default(3_600_000),
            /**
             * Automatic rollback: when the mean live recall
             * (`vss_avg_recall` samples) of the version a variant serves stays below its `min_recall`
             * over `windowMs`, with at least `minSamples` samples, the model is rolled back.
             */
            autoRollback: z
              .object({
                enabled: z.boolean().default(true),
                windowMs: z.number().int().min(1000).max(86_400_000).default(300_000),
                minSamples: z.number().int().min(1).max(100_000).default(20),
              })
              .strict()
              .prefault({}),
            /** Where ingestion jobs run: the built-in file runner, or an external batch platform over HTTP. */
            jobRunner: z
              .object({
                kind: z.enum(['file', 'http']).default('file'),
                /** http: base URL of the batch platform (POST <url>/jobs, GET <url>/jobs/<id>). */
                url: url.optional(),
                /**
                 * file, with PostgreSQL: a RUNNING job whose process stopped renewing its record for
                 * this long is taken over and resumed, ms. On PGlite the data directory's lock proves
                 * a predecessor dead, so its jobs are taken over at once.
                 */
                leaseMs: z.number().int().min(300).max(600_000).default(30_000),
              })
              .strict()
              .superRefine((runner, ctx) => {
                if (runner.kind === 'http' && runner.url === undefined) {
                  ctx.addIssue({
                    code: 'custom',
                    path: ['url'],
                    message: 'is required when the job runner is http (LATTICE_VSS_JOB_RUNNER_URL)',
                  });
                }
              })
              .prefault({}),
          })
          .strict()
          .prefault({}),
        /**
         * The named clusters (vss.md "Concepts"). Experiment is `vectorDb` below with the platform
         * cache; production is named here: promoted models and variants are searched and written there.
         */
        clusters: z
          .object({
            production: z
              .object({
                /** The production cluster's vector database: embedded (default `<dataDir>/vectordb-production`), Qdrant or pgvector. */
                vectorDb: vectorDbSettings('LATTICE_VSS_PRODUCTION_QDRANT_URL'),
                /**
                 * The production cluster's cache target: serving's distributed result-cache keys of
                 * production variants start with this prefix (after the cache's own `keyPrefix`), so
                 * the two clusters' results never share entries and can be flushed apart.
                 */
                cacheKeyPrefix: z
                  .string()
                  .regex(/^[A-Za-z0-9_:.-]{1,64}$/, 'must be 1-64 letters, digits, "_", ":", "." or "-"')
                  .default('production:'),
              })
              .strict()
              .prefault({}),
          })
          .strict()
          .prefault({}),
        /** The vector database: embedded (files under `<dataDir>/vectordb`), a Qdrant server, or pgvector on `sql`. */
        vectorDb: vectorDbSettings('LATTICE_QDRANT_URL'),
      })
      .strict()
      .prefault({}),
    /**
     * TLS of every gRPC and HTTP server of the process and of its outgoing calls (src/platform/http/tls-material.ts
     * reads and checks the files once at start-up). Off by default: the embedded defaults speak plaintext on loopback.
     */
    tls: z
      .object({
        /** PEM certificate chain every server presents; with `key`, every gRPC and HTTP server serves TLS only. */
        cert: z.string().min(1).optional(),
        /** PEM private key of `cert` (unencrypted). */
        key: z.string().min(1).optional(),
        /** PEM CA bundle that client certificates must chain to (for `clientAuth` optional / required). */
        clientCa: z.string().min(1).optional(),
        /**
         * Client certificates: `off` (not asked for), `optional` (asked for; a connection without a
         * certificate trusted by `clientCa` is served as one without any), `required` (refused without one).
         */
        clientAuth: z.enum(['off', 'optional', 'required']).default('off'),
        /**
         * Whether outgoing calls (the orchestrator's downstream calls, the CLI's clients) use TLS: `auto`
         * turns it on when `cert` or `ca` is set.
         */
        outgoing: z.enum(['auto', 'on', 'off']).default('auto'),
        /** PEM CA bundle trusted for outgoing calls; unset: the system's roots. */
        ca: z.string().min(1).optional(),
        /** PEM certificate presented on outgoing calls, to servers that ask for client certificates. */
        clientCert: z.string().min(1).optional(),
        /** PEM private key of `clientCert`. */
        clientKey: z.string().min(1).optional(),
        /** Name expected in servers' certificates on outgoing calls, instead of the host dialled (e.g. an IP). */
        serverName: z.string().min(1).optional(),
      })
      .strict()
      .superRefine((tls, ctx) => {
        const pairs = [
          ['cert', 'key', 'LATTICE_TLS_CERT', 'LATTICE_TLS_KEY'],
          ['clientCert', 'clientKey', 'LATTICE_TLS_CLIENT_CERT', 'LATTICE_TLS_CLIENT_KEY'],
        ] as const;
        for (const [a, b, envA, envB] of pairs) {
          if ((tls[a] === undefined) !== (tls[b] === undefined)) {
            const missing = tls[a] === undefined ? a : b;
            ctx.addIssue({
              code: 'custom',
              path: [missing],
              message: `is required with ${missing === a ? b : a} (set both ${envA} and ${envB})`,
            });
          }
        }
        if (tls.clientAuth !== 'off' && tls.cert === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['clientAuth'],
            message: `${tls.clientAuth} client certificates need the servers' own certificate (LATTICE_TLS_CERT and LATTICE_TLS_KEY)`,
          });
        }
        if (tls.clientAuth !== 'off' && tls.clientCa === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['clientCa'],
            message: `is required when clientAuth is ${tls.clientAuth}: the CA that client certificates must chain to (LATTICE_TLS_CLIENT_CA)`,
          });
        }
      })
      .prefault({}),
    grpc: z
      .object({
        /** Port of the platform gRPC server (health, reflection); 0 picks a free one. */
        port: port.default(50050),
        maxMessageBytes: z
          .number()
          .int()
          .positive()
          .default(16 * 1024 * 1024),
        /** How long shutdown waits for in-flight calls before cancelling them. */
        shutdownGraceMs: z.number().int().nonnegative().default(10_000),
        /** Deadline of gRPC calls whose client set none: every call ends, answered or not. */
        defaultDeadlineMs: z.number().int().positive().default(30_000),
        /** Unary calls one gRPC server runs at once; past it new calls get RESOURCE_EXHAUSTED. */
        maxInFlightCalls: z.number().int().positive().default(1024),
        /**
         * Admission control of every gRPC server, per server and per call class: `heavy` calls
         * (large Searches, Predicts of many targets, requests decoded in slices) and `light` ones
         * each get their own concurrency and queue, so heavy work never holds light calls' slots.
         */
        admission: z
          .object({
            light: admissionClass(DEFAULT_ADMISSION.light),
            heavy: admissionClass(DEFAULT_ADMISSION.heavy),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type Settings = z.output<typeof settingsSchema>;
export type SettingsInput = z.input<typeof settingsSchema>;
