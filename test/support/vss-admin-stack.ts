/**
 * The vss admin HTTP API as `lattice vss` serves it, in this process: the consumers part and the
 * admin part (src/vss/start-vss.ts) on one Platform with the embedded
 * defaults (PGlite, the memory queue, the embedded vector DB) in a data directory of its own, the
 * API on a free loopback port. For clients of the API (the `lattice vss` admin subcommands) that
 * need its real answers: operations that really ingest, index and fail. Training data written under
 * `trainingDir` lies inside the data directory, one of the default training-data roots.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/platform/logging/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { type RunningVss, startVss } from '../../src/vss/index.js';
import { openVssStore, type VssStore } from '../../src/vss/store/index.js';

export interface VssAdminStack {
  /** The admin API's base URL (`http://127.0.0.1:<port>`). */
  url: string;
  /** The SQL store behind the API, to check what a request changed. */
  store: VssStore;
  /** A directory for training data, inside the data directory (an allowed training-data root). */
  trainingDir: string;
  /**
   * Stops the consumers, as when their process is down: the API accepts operations and their jobs
   * publish, but no ingestion completes, so a reset stays RUNNING at `ingesting` until
   * `startConsumers`.
   */
  stopConsumers(): Promise<void>;
  /** Starts the consumers again (after `stopConsumers`): they take up what was published meanwhile. */
  startConsumers(): Promise<void>;
  close(): Promise<void>;
}

export interface VssAdminStackOptions {
  /** `vss.admin.apiKeys`: when given, every request needs one of them. */
  apiKeys?: string[];
}

export async function inProcessVssAdmin(options: VssAdminStackOptions = {}): Promise<VssAdminStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-vss-admin-stack-'));
  const settings = loadSettings({
    env: { LATTICE_DATA_DIR: dataDir },
    overrides: {
      host: '127.0.0.1',
      queue: { journalDir: '' },
      vss: {
        // Fast batching and polling, so a test's small operations finish in moments.
        consumers: { lingerMs: 5, retryBaseMs: 50, retryMaxMs: 500 },
        admin: { pollIntervalMs: 20, ...(options.apiKeys === undefined ? {} : { apiKeys: options.apiKeys }) },
      },
    },
  });
  const platform = new Platform(settings, { logger: createLogger('vss-admin-stack', { level: 'silent' }) });
  let consumers: RunningVss | undefined;
  let admin: RunningVss | undefined;
  const close = async () => {
    await admin?.stop();
    await consumers?.stop();
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    consumers = await startVss(platform, { consumers: {} });
    admin = await startVss(platform, { admin: { port: 0 } });
    const listening = admin.admin!;
    return {
      url: `http://127.0.0.1:${listening.port}`,
      store: await openVssStore(await platform.sqlClient()),
      trainingDir: join(dataDir, 'training'),
      stopConsumers: async () => {
        await consumers?.stop();
        consumers = undefined;
      },
      startConsumers: async () => {
        consumers ??= await startVss(platform, { consumers: {} });
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
