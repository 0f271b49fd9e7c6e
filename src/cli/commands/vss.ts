import { parseArgs } from 'node:util';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { Platform } from '../../platform/platform.js';
import { loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { CliContext } from '../main.js';
import { type RunningPart, startVssServingPart } from '../parts.js';
import { describePorts } from './ports.js';

/** Port of `lattice vss serving` when `--port` is not given. */
export const DEFAULT_VSS_SERVING_PORT = 50055;

const usage = `Usage:
  lattice vss serving [--port N]
      serve vss.v1.SimilaritySearch (default port ${DEFAULT_VSS_SERVING_PORT}) on the configured SQL store,
      cache and vector database (settings vss.vectorDb: embedded in <dataDir>/vectordb by default).
      Settings vss.pageTokenSecret (LATTICE_VSS_PAGE_TOKEN_SECRET) sets the page-token key (share it
      between replicas); vss.recallSampleRate (LATTICE_VSS_RECALL_SAMPLE_RATE, 0..1, default 0.01) the
      share of queries re-run for avg_recall.`;

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw invalidArgument(`--port must be a port number from 0 to 65535, got ${JSON.stringify(text)}`);
  }
  return port;
}

/** `lattice vss serving`. */
export async function runVss(context: CliContext): Promise<void> {
  let parsed: { positionals: string[]; port: string | undefined };
  try {
    const { values, positionals } = parseArgs({
      args: context.argv,
      options: { port: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    parsed = { positionals, port: values.port };
  } catch (err) {
    throw invalidArgument(`${describeError(err)}\n\n${usage}`);
  }
  const [subcommand] = parsed.positionals;
  if (subcommand !== 'serving')
    throw invalidArgument(`unknown vss subcommand "${subcommand ?? ''}"\n\n${usage}`);
  const settings = loadSettings({ file: context.settingsFile });
  const port = parsed.port === undefined ? settings.vss.servingPort : parsePort(parsed.port);
  const platform = new Platform(settings);
  let part: RunningPart;
  try {
    part = await startVssServingPart(platform, port);
  } catch (err) {
    await platform.close();
    throw err;
  }
  const ports = describePorts(platform);
  console.log(`Lattice vss serving is up (${ports.sql}; ${ports.cache}; vector DB ${ports.vectorDb}):`);
  console.log(`  vss.v1.SimilaritySearch gRPC (health, reflection)  ${settings.host}:${part.port}`);
  console.log('Ctrl-C stops it, draining in-flight calls.');
  onShutdownSignal(platform.logger, async () => {
    await part.stop();
    await platform.close();
  });
}
