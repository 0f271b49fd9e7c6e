import { describeError } from '../../platform/errors.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { Platform } from '../../platform/platform.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import type { Invocation } from '../command-kit.js';
import { type DataDirectoryState, inspectDataDirectory } from '../data-directory.js';
import { opsBaseUrl } from '../ops-url.js';
import type { CheckOptions } from './check.command.js';
import { describePorts } from './ports.js';

/**
 * `lattice check`: one line per port. A server adapter (etcd, NATS, PostgreSQL, Redis, Qdrant) and an
 * embedded one that owns no files (the file config store, the memory cache, a queue without journal)
 * is opened and runs its readiness check. An embedded adapter that owns a data directory (PGlite, the
 * queue journal, the embedded vector database) is never opened: opening one creates its files, runs
 * recovery and takes seconds, and a check must leave the machine as it found it. Its directory is
 * looked at instead (data-directory.ts); when a running process holds it, that process's /readyz
 * on the ops port answers for it, from the same check run inside it. Exit status 1 when any fails.
 */
/** One port's result, as `lattice check --json` prints it. */
export interface PortCheck {
  port: string;
  where: string;
  ok: boolean;
  ms: number;
  /** Why it failed. */
  error?: string;
  /** An embedded data directory looked at without opening it: what was found. */
  note?: string;
  /** Set when the port is held by a running process and its readiness came from that process's /readyz. */
  heldBy?: { pid: number; readyz: string };
}

const PORTS = ['configStore', 'queue', 'sql', 'cache', 'vectorDb'] as const;
type PortName = (typeof PORTS)[number];

export async function runCheck({ options, context }: Invocation<CheckOptions>): Promise<number> {
  const settings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings, {
    logger: createLogger('lattice', { level: 'silent' }),
    metrics: new Metrics(),
  });
  const where = describePorts(platform);
  let running: Promise<RunningChecks> | undefined;
  const results: PortCheck[] = [];
  try {
    for (const port of PORTS) {
      const started = performance.now();
      const result = { port, where: where[port] ?? port };
      const ms = () => Math.round(performance.now() - started);
      const directory = dataDirectoryOf(settings, port);
      if (directory === undefined) {
        try {
          await open(platform, port);
          await platform.readiness()[port]?.();
          results.push({ ...result, ok: true, ms: ms() });
        } catch (err) {
          results.push({ ...result, ok: false, ms: ms(), error: describeError(err) });
        }
        continue;
      }
      const state = inspectDataDirectory(directory);
      if (state.kind !== 'held') {
        results.push({ ...result, ...fromDirectory(state), ms: ms() });
        continue;
      }
      running ??= runningChecks(settings);
      const { url, checks, error } = await running;
      const answer = checks?.[port];
      const via = { heldBy: { pid: state.pid, readyz: url } };
      if (answer === 'ok') results.push({ ...result, ...via, ok: true, ms: ms() });
      else {
        results.push({
          ...result,
          ...via,
          ok: false,
          ms: ms(),
          error:
            answer !== undefined
              ? `in use by process ${state.pid}, and its ${url} says: ${answer}`
              : `in use by process ${state.pid}, and its readiness is unknown (${error ?? `${url} has no "${port}" check`})`,
        });
      }
    }
  } finally {
    await platform.close();
  }
  if (options.json) console.log(JSON.stringify(results, null, 2));
  else {
    for (const r of results) {
      if (!r.ok) console.log(`FAILED  ${r.port.padEnd(12)} ${r.where}: ${r.error}`);
      else if (r.heldBy) {
        console.log(
          `ok      ${r.port.padEnd(12)} ${r.where} (in use by process ${r.heldBy.pid}; its ${r.heldBy.readyz} says ok)`,
        );
      } else if (r.note) console.log(`ok      ${r.port.padEnd(12)} ${r.where} (${r.note})`);
      else console.log(`ok      ${r.port.padEnd(12)} ${r.where} (${r.ms} ms)`);
    }
  }
  return results.some((r) => !r.ok) ? 1 : 0;
}

/** The data directory a port's embedded adapter owns, when it owns one; undefined: open the adapter. */
function dataDirectoryOf(settings: LoadedSettings, port: PortName): string | undefined {
  switch (port) {
    case 'queue':
      return settings.queue.kind === 'memory' ? settings.queue.journalDir : undefined;
    case 'sql':
      return settings.sql.kind === 'pglite' ? settings.sql.dataDir : undefined;
    case 'vectorDb':
      if (settings.vss.vectorDb.kind === 'embedded') return settings.vss.vectorDb.dir;
      // pgvector lives in the SQL database: on PGlite, the directory that one owns.
      if (settings.vss.vectorDb.kind === 'pgvector' && settings.sql.kind === 'pglite')
        return settings.sql.dataDir;
      return undefined;
    default:
      return undefined;
  }
}

function open(platform: Platform, port: PortName): Promise<unknown> {
  switch (port) {
    case 'configStore':
      return platform.configStore();
    case 'queue':
      return platform.queue();
    case 'sql':
      return platform.sqlClient();
    case 'cache':
      return platform.cache();
    case 'vectorDb':
      return platform.vectorDb();
  }
}

function fromDirectory(state: Exclude<DataDirectoryState, { kind: 'held' }>): {
  ok: boolean;
  note?: string;
  error?: string;
} {
  switch (state.kind) {
    case 'absent':
      return { ok: true, note: 'not created yet: the first start creates it' };
    case 'idle':
      return { ok: true, note: 'no process holds it; not opened' };
    case 'unusable':
      return { ok: false, error: state.reason };
  }
}

interface RunningChecks {
  url: string;
  checks?: Record<string, string>;
  error?: string;
}

/** The running platform's /readyz checks (on this machine: the lock says the holder is here). */
async function runningChecks(settings: LoadedSettings): Promise<RunningChecks> {
  const url = `${opsBaseUrl(settings)}/readyz`;
  try {
    const response = await fetch(url, {
      signal: AbortSignal.timeout(settings.metrics.readyTimeoutMs + 2000),
    });
    const body = (await response.json()) as { checks?: Record<string, string> };
    return { url, checks: body.checks ?? {} };
  } catch (err) {
    return { url, error: `${url} did not answer: ${describeError(err)}` };
  }
}
