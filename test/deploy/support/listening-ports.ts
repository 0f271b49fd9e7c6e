/**
 * Which ports a `lattice …` command line listens on, given the settings its environment produces: the
 * same choices the commands in src/cli/commands/ make (a flag wins over the setting). The deployment
 * tests compare every declared container port, published port and probe with this, so a manifest
 * that probes or exposes a port the process does not listen on fails here rather than in a cluster.
 */
import type { LoadedSettings } from '../../../src/platform/settings/index.js';

export interface ListeningPort {
  /** What listens there, e.g. `orchestrator`, `ops` (/healthz /readyz /metrics), `vss-admin`. */
  name: string;
  port: number;
  protocol: 'grpc' | 'http';
}

/** The value of `--flag N` or `--flag=N`, if given. */
export function flagValue(argv: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === flag) return argv[i + 1];
    if (word.startsWith(`${flag}=`)) return word.slice(flag.length + 1);
  }
  return undefined;
}

function portFlag(argv: readonly string[], flag: string): number | undefined {
  const value = flagValue(argv, flag);
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
    throw new Error(`lattice ${argv.join(' ')}: ${flag} ${value} is not a fixed port`);
  }
  return port;
}

/** The positional words of a command line (its command and subcommand), flags and their values left out. */
export function commandWords(argv: readonly string[]): string[] {
  const words: string[] = [];
  for (const word of argv) {
    if (word.startsWith('-')) break;
    words.push(word);
  }
  return words;
}

/** What `lattice <argv>` listens on; [] for one-shot commands; throws for a command it does not know. */
export function listeningPorts(argv: readonly string[], settings: LoadedSettings): ListeningPort[] {
  const ops = (flag = '--metrics-port'): ListeningPort => ({
    name: 'ops',
    port: portFlag(argv, flag) ?? settings.metrics.port,
    protocol: 'http',
  });
  const vssServing = (): ListeningPort => ({
    name: 'vss-serving',
    port: portFlag(argv, '--port') ?? settings.vss.servingPort,
    protocol: 'grpc',
  });
  const vssAdmin: ListeningPort = { name: 'vss-admin', port: settings.vss.admin.port, protocol: 'http' };
  const command = commandWords(argv).join(' ');
  switch (command) {
    case 'up':
      return [
        { name: 'platform', port: settings.grpc.port, protocol: 'grpc' },
        { name: 'orchestrator', port: settings.orchestrator.port, protocol: 'grpc' },
        { name: 'featurestore', port: settings.featurestore.port, protocol: 'grpc' },
        { name: 'modelserver', port: settings.modelserver.port, protocol: 'grpc' },
        { name: 'compute', port: settings.compute.port, protocol: 'grpc' },
        { name: 'vss-serving', port: settings.vss.servingPort, protocol: 'grpc' },
        vssAdmin,
        { name: 'ops', port: settings.metrics.port, protocol: 'http' },
      ];
    case 'orchestrator':
      return [
        {
          name: 'orchestrator',
          port: portFlag(argv, '--port') ?? settings.orchestrator.port,
          protocol: 'grpc',
        },
        ops(),
      ];
    case 'featurestore serve':
      return [
        {
          name: 'featurestore',
          port: portFlag(argv, '--port') ?? settings.featurestore.port,
          protocol: 'grpc',
        },
      ];
    case 'modelserver':
      return [
        {
          name: 'modelserver',
          port: portFlag(argv, '--port') ?? settings.modelserver.port,
          protocol: 'grpc',
        },
      ];
    case 'compute': {
      const grpc: ListeningPort = {
        name: 'compute',
        port: portFlag(argv, '--port') ?? settings.compute.port,
        protocol: 'grpc',
      };
      // The compute server has an ops server only when --metrics-port is given.
      return flagValue(argv, '--metrics-port') === undefined ? [grpc] : [grpc, ops()];
    }
    case 'vss':
      return [vssServing(), vssAdmin, ops()];
    case 'vss serving':
      return [vssServing(), ops()];
    case 'vss consumers':
      return [ops()];
    case 'vss admin':
      return [vssAdmin, ops()];
    case 'modelserver demo-models':
    case 'featurestore load':
    case 'compute put':
      return [];
    default:
      throw new Error(
        `no port model for "lattice ${argv.join(' ')}": add it to test/deploy/support/listening-ports.ts`,
      );
  }
}
