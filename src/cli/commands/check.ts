import { DirectoryInUseError } from '../../platform/dir-lock.js';
import { describeError } from '../../platform/errors.js';
import { createLogger } from '../../platform/logging/index.js';
import { Platform } from '../../platform/platform.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import type { Invocation } from '../command-kit.js';
import { opsBaseUrl } from '../ops-url.js';
import type { CheckOptions } from './check.command.js';
import { describePorts } from './ports.js';

/**
 * Opens each configured port's adapter (the vector database included), runs its readiness check, and prints one line per port.
 * Exit status 1 when any fails: a quick way to verify settings before starting a service.
 *
 * An embedded adapter that a running process holds (`lattice up` locks its PGlite directory, queue
 * journal and vector DB) cannot be opened twice: its line then comes from that process's own
 * /readyz on the ops port, which runs the same check inside it.
 */
/** One port's result, as `lattice check --json` prints it. */
export interface PortCheck {
  port: string;
  where: string;
  ok: boolean;
  ms: number;
  /** Why it failed. */
  error?: string;
  /** Set when the port is held by a running process and its readiness came from that process's /readyz. */
  heldBy?: { pid: number; readyz: string };
}

export async function runCheck({ options, context }: Invocation<CheckOptions>): Promise<number> {
  const settings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings, { logger: createLogger('lattice', { level: 'silent' }) });
  const where = describePorts(platform);
  const open: Record<string, () => Promise<unknown>> = {
    configStore: () => platform.configStore(),
    queue: () => platform.queue(),
    sql: () => platform.sqlClient(),
    cache: () => platform.cache(),
    vectorDb: () => platform.vectorDb(),
  };
  let running: Promise<RunningChecks> | undefined;
  const results: PortCheck[] = [];
  for (const [name, openPort] of Object.entries(open)) {
    const started = performance.now();
    const result = { port: name, where: where[name] ?? name };
    const ms = () => Math.round(performance.now() - started);
    try {
      await openPort();
      await platform.readiness()[name]?.();
      results.push({ ...result, ok: true, ms: ms() });
    } catch (err) {
      const holder = heldBy(err);
      if (holder === undefined) {
        results.push({ ...result, ok: false, ms: ms(), error: describeError(err) });
        continue;
      }
      running ??= runningChecks(settings);
      const { url, checks, error } = await running;
      const answer = checks?.[name];
      const via = { heldBy: { pid: holder, readyz: url } };
      if (answer === 'ok') results.push({ ...result, ...via, ok: true, ms: ms() });
      else {
        results.push({
          ...result,
          ...via,
          ok: false,
          ms: ms(),
          error:
            answer !== undefined
              ? `in use by process ${holder}, and its ${url} says: ${answer}`
              : `in use by process ${holder}, and its readiness is unknown (${error ?? `${url} has no "${name}" check`})`,
        });
      }
    }
  }
  await platform.close();
  if (options.json) console.log(JSON.stringify(results, null, 2));
  else {
    for (const r of results) {
      if (!r.ok) console.log(`FAILED  ${r.port.padEnd(12)} ${r.where}: ${r.error}`);
      else if (r.heldBy) {
        console.log(
          `ok      ${r.port.padEnd(12)} ${r.where} (in use by process ${r.heldBy.pid}; its ${r.heldBy.readyz} says ok)`,
        );
      } else console.log(`ok      ${r.port.padEnd(12)} ${r.where} (${r.ms} ms)`);
    }
  }
  return results.some((r) => !r.ok) ? 1 : 0;
}

/** The pid holding an embedded adapter's directory lock, when that is why it could not be opened. */
function heldBy(err: unknown): number | undefined {
  return err instanceof DirectoryInUseError ? err.holderPid : undefined;
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
