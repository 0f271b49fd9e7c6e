import { parseArgs } from 'node:util';
import { describeError, isLatticeError } from '../platform/errors.js';

const usage = `lattice — the Lattice ML serving platform

Usage: lattice <command> [options]

Commands:
  up         start every part of the platform on the configured adapters (embedded by default)
  check      open every configured adapter (config store, queue, SQL, cache) and report
  compute    serve numerix.Numerix/Compute over stored expressions; "compute put <id> <expr>" stores one
  featurestore  serve retrieve.FeatureService [--registry FILE] [--store memory|redis] [--port N]; "load" bulk-loads CSV/JSONL/Parquet
  logs       decode inference logs: "logs decode --file FILE | --from-queue TOPIC" to JSON Lines or Parquet
  modelserver  serve ONNX models over KServe v2 gRPC [--repository DIR] [--port N]; "demo-models" writes some
  orchestrator  serve orchestrator.v1.Predict and the legacy Orchestrator API [--port N] [--metrics-port N]
  vss        vss serving and consumers in one process [--port N]; "vss serving" or "vss consumers" alone
             (with a vector DB server); "vss replay [--topic T] [--limit N] [--id ID]" re-drives dead letters
             "vss register-store|register-model|register-variant|reset|trigger|promote|retry|status|models":
             clients of the vss admin HTTP API
  predict    one Predict: --model-config ID --context user_id=u1 --target c1 --target c2 [--kind pair|slate] [--json]
  search     one vss Search: --entity E --model M [--variant V] (--id ID | --vector V) [--filter F] [--json]
  settings   print the effective settings (tokens redacted) and where each can be set
  help       this text

Options (every command):
  --settings FILE   a JSON or YAML settings file (also LATTICE_SETTINGS_FILE)

Configuration is read from LATTICE_* environment variables and the settings file; see README.md.`;

export interface CliContext {
  /** Positional arguments after the command name (options of unknown arity are not told apart: prefer `argv`). */
  args: string[];
  /** Every argument after the command name, options included (without `--settings`), for the command's own strict parsing. */
  argv: string[];
  settingsFile: string | undefined;
}

type Command = (context: CliContext) => Promise<void>;

/**
 * Each command's module is loaded only when it runs: importing every adapter and server up front
 * cost ~0.7 s and ~110 MB for `lattice --help` (compiled).
 */
const commands: Record<string, () => Promise<Command>> = {
  up: async () => (await import('./commands/up.js')).runUp,
  check: async () => (await import('./commands/check.js')).runCheck,
  compute: async () => (await import('./commands/compute.js')).runCompute,
  featurestore: async () => (await import('./commands/featurestore.js')).runFeatureStore,
  logs: async () => (await import('./commands/logs.js')).runLogs,
  modelserver: async () => (await import('./commands/modelserver.js')).runModelserver,
  orchestrator: async () => (await import('./commands/orchestrator.js')).runOrchestrator,
  predict: async () => (await import('./commands/predict.js')).runPredict,
  search: async () => (await import('./commands/search.js')).runSearch,
  settings: async () => (await import('./commands/settings.js')).runSettings,
  vss: async () => (await import('./commands/vss.js')).runVss,
};

/** Commands that parse --help themselves. */
const OWN_HELP = new Set([
  'compute',
  'featurestore',
  'logs',
  'modelserver',
  'orchestrator',
  'predict',
  'search',
  'vss',
]);

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { settings: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: false,
  });
  const [name, ...args] = positionals;
  // A command with usage of its own answers its own --help (and its subcommands').
  if (!name || name === 'help' || (values.help && !OWN_HELP.has(name))) {
    console.log(usage);
    return;
  }
  const load = commands[name];
  if (!load) {
    console.error(`lattice: unknown command "${name}"\n\n${usage}`);
    process.exitCode = 2;
    return;
  }
  const settingsFile = typeof values.settings === 'string' ? values.settings : undefined;
  const command = await load();
  await command({ args, argv: argsAfterCommand(argv, name), settingsFile });
}

/** The arguments after the command name, with the global `--settings FILE` removed. */
function argsAfterCommand(argv: readonly string[], name: string): string[] {
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--settings') i++;
    else if (!arg.startsWith('--settings=')) rest.push(arg);
  }
  return rest.slice(rest.indexOf(name) + 1);
}

// A reader that stops early (`lattice logs decode | head`) closes the pipe: that ends the output,
// it is not an error worth a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv.slice(2)).catch((err: unknown) => {
  // Errors a user can act on print their message alone; anything else keeps its stack.
  console.error(`lattice: ${isLatticeError(err) ? err.message : describeError(err)}`);
  if (!isLatticeError(err) && err instanceof Error) console.error(err.stack);
  process.exit(1);
});
