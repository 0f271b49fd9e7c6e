import { parseArgs } from 'node:util';
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import { Platform } from '../../platform/platform.js';
import { TopicNotFoundError } from '../../platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import { replayDeadLetters } from '../../vss/consumers/replay.js';
import { vssTopics } from '../../vss/consumers/vss-topics.js';
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
      share of queries re-run for avg_recall.
  lattice vss replay [--topic T] [--limit N] [--id ID]
      re-publish dead letters to the topic they came from, once their cause is fixed: all of them,
      the oldest N, or the one whose dead-letter id (<topic>:<group>:<sequence>, as logged) or original
      message id is ID. Default topics: vss.consumers.embeddingsTopic and realtimeTopic. A dead letter
      leaves <topic>-dlq only once its re-publish is durable. On the embedded queue, stop the process
      that holds the queue journal first.`;

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw invalidArgument(`--port must be a port number from 0 to 65535, got ${JSON.stringify(text)}`);
  }
  return port;
}

function parseLimit(text: string): number {
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1 || !Number.isSafeInteger(limit)) {
    throw invalidArgument(`--limit must be a positive integer, got ${JSON.stringify(text)}`, 'limit');
  }
  return limit;
}

interface VssArgs {
  positionals: string[];
  port: string | undefined;
  topic: string | undefined;
  limit: string | undefined;
  id: string | undefined;
}

/** `lattice vss serving` and `lattice vss replay`. */
export async function runVss(context: CliContext): Promise<void> {
  let parsed: VssArgs;
  try {
    const { values, positionals } = parseArgs({
      args: context.argv,
      options: {
        port: { type: 'string' },
        topic: { type: 'string' },
        limit: { type: 'string' },
        id: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    parsed = { positionals, port: values.port, topic: values.topic, limit: values.limit, id: values.id };
  } catch (err) {
    throw invalidArgument(`${describeError(err)}\n\n${usage}`);
  }
  const [subcommand] = parsed.positionals;
  if (subcommand === 'serving') {
    if (parsed.topic !== undefined || parsed.limit !== undefined || parsed.id !== undefined) {
      throw invalidArgument(`--topic, --limit and --id belong to "vss replay"\n\n${usage}`);
    }
    await runServing(context, parsed.port);
    return;
  }
  if (subcommand === 'replay') {
    if (parsed.port !== undefined) throw invalidArgument(`--port belongs to "vss serving"\n\n${usage}`);
    if (parsed.id !== undefined && parsed.limit !== undefined) {
      throw invalidArgument('--id replays one dead letter; it cannot be combined with --limit', 'limit');
    }
    const limit = parsed.limit === undefined ? undefined : parseLimit(parsed.limit);
    await runReplay(loadSettings({ file: context.settingsFile }), {
      topic: parsed.topic,
      limit,
      id: parsed.id,
    });
    return;
  }
  throw invalidArgument(`unknown vss subcommand "${subcommand ?? ''}"\n\n${usage}`);
}

async function runServing(context: CliContext, portText: string | undefined): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  const port = portText === undefined ? settings.vss.servingPort : parsePort(portText);
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

/** Replays dead letters of each topic in turn; with --limit, N across them; with --id, the first match. */
async function runReplay(
  settings: LoadedSettings,
  options: { topic: string | undefined; limit: number | undefined; id: string | undefined },
): Promise<void> {
  const platform = new Platform(settings);
  try {
    const queue = await platform.queue();
    const topics = options.topic === undefined ? vssTopics(settings.vss.consumers) : [options.topic];
    let budget = options.limit;
    let replayed = 0;
    for (const topic of topics) {
      if (budget === 0 || (options.id !== undefined && replayed > 0)) break;
      try {
        const report = await replayDeadLetters({
          queue,
          topic,
          ...(budget === undefined ? {} : { limit: budget }),
          ...(options.id === undefined ? {} : { id: options.id }),
          logger: platform.logger,
        });
        replayed += report.replayed;
        if (budget !== undefined) budget -= report.replayed;
        const skipped =
          report.unreplayable > 0 ? `, ${report.unreplayable} without an origin left in place` : '';
        console.log(
          `${topic}: replayed ${report.replayed} dead letter(s) from ${report.deadLetterTopic}${skipped}; ${report.remaining} remain`,
        );
      } catch (err) {
        if (!(err instanceof TopicNotFoundError)) throw err;
        console.log(`${topic}: no such topic, nothing to replay`);
      }
    }
    if (options.id !== undefined && replayed === 0) {
      throw new LatticeError('NOT_FOUND', `no dead letter with id "${options.id}" in ${topics.join(', ')}`, {
        field: 'id',
      });
    }
  } finally {
    await platform.close();
  }
}
