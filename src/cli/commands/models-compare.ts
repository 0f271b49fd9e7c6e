/**
 * `lattice models compare PRIMARY SHADOW`: how a shadow config's answers compare with its primary's
 * (docs/orchestrator.md "Shadow configs"), as the running orchestrator measured them, from GET
 * /api/v1/models/PRIMARY/shadows/SHADOW on its ops server.
 */
import type { ShadowFiguresAnswer } from '../../orchestrator/console/shadow-schemas.js';
import { describeError, LatticeError } from '../../platform/errors.js';
import { loadSettings } from '../../platform/settings/index.js';
import type { Invocation } from '../command-kit.js';
import { opsBaseUrl } from '../ops-url.js';
import { textTable } from '../text-table.js';
import type { ModelsCompareOptions } from './models.command.js';

export async function runModelsCompare({
  options,
  args,
  context,
}: Invocation<ModelsCompareOptions>): Promise<void> {
  const [primary, shadow] = args as [string, string];
  const settings = loadSettings({ file: context.settingsFile });
  const base = opsBaseUrl(settings, options.address).replace(/\/+$/, '');
  const url = `${base}/api/v1/models/${encodeURIComponent(primary)}/shadows/${encodeURIComponent(shadow)}`;
  const token = options.callerToken ?? process.env.LATTICE_CALLER_TOKEN;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(5000),
    });
  } catch (err) {
    throw new LatticeError('UNAVAILABLE', `no orchestrator answered at ${url} (${describeError(err)})`);
  }
  const body = (await response.json().catch(() => ({}))) as ShadowFiguresAnswer & {
    error?: { message?: string };
  };
  if (!response.ok)
    throw new LatticeError(
      response.status === 404 ? 'NOT_FOUND' : 'UNAVAILABLE',
      `${url} answered HTTP ${response.status}: ${body.error?.message ?? 'no reason given'}`,
    );
  if (options.json) {
    console.log(JSON.stringify(body, null, 2));
    return;
  }
  console.log(formatFigures(body));
}

const num = (v: number | null, digits = 4) => (v === null ? '-' : Number(v.toFixed(digits)).toString());

/** The figures as text: a summary, then the per-component latency differences. */
export function formatFigures(f: ShadowFiguresAnswer): string {
  const lines = [
    `${f.primary} -> shadow ${f.shadow}: ${
      f.active ? `mirroring ${f.percentage}% of requests, k=${f.k}` : 'not mirroring now (earlier figures)'
    }`,
    `sampled ${f.sampled}, compared ${f.compared}, failed ${f.failed}, dropped ${f.dropped.queue_full} (queue full) + ${f.dropped.unknown_shadow} (shadow not loaded)`,
    `over the last ${f.window} comparisons:`,
    textTable([
      ['FIGURE', 'RECENT', 'LAST'],
      ['overlap@k', num(f.overlap_at_k), num(f.last?.overlap_at_k ?? null)],
      ['kendall_tau', num(f.kendall_tau), num(f.last?.kendall_tau ?? null)],
      ['mean_abs_diff', num(f.mean_abs_diff, 6), num(f.last?.mean_abs_diff ?? null, 6)],
      ['max_abs_diff', num(f.max_abs_diff, 6), num(f.last?.max_abs_diff ?? null, 6)],
      ...Object.entries(f.latency_diff_ms).map(([component, ms]) => [
        `latency_diff_ms ${component}`,
        num(ms, 3),
        num(f.last?.latency_diff_ms[component] ?? null, 3),
      ]),
    ]),
  ];
  return lines.join('\n');
}
