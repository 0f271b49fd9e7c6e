/**
 * `lattice vss`, `lattice vss consumers` or `lattice vss serving` as its own process, the way a user
 * runs it: settings from the environment (and a settings file when given), free loopback ports
 * (`--port 0`, `LATTICE_METRICS_PORT=0`, read back from what it prints), stopped with SIGTERM or
 * killed with SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually } from './servers.js';

const bin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));

export type VssCommand = 'vss' | 'vss consumers' | 'vss serving';

export interface LatticeVssProcess {
  /** `127.0.0.1:port` of vss.v1.SimilaritySearch; undefined for `vss consumers`. */
  servingAddress: string | undefined;
  /** `http://127.0.0.1:port` of /healthz, /readyz and /metrics. */
  opsUrl: string;
  /** `http://127.0.0.1:port` of the admin HTTP API; undefined when the command runs no admin. */
  adminUrl: string | undefined;
  child: ChildProcess;
  output(): string;
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Resolves once the process exited, with its code (null when a signal ended it). */
  exit(): Promise<number | null>;
  /** SIGTERM (graceful: drains, snapshots), then the exit code; SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<number | null>;
  /** SIGKILL, as a crash; resolves once it is gone. */
  kill(): Promise<void>;
  /** The sum of the samples of metric `name` whose labels include `labels`; 0 when none. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

export interface LatticeVssOptions {
  command: VssCommand;
  /** Options after the command (`--partitions 0-3`). */
  args?: readonly string[];
  /** LATTICE_* settings (data directory, adapters); the test's own LATTICE_* variables are not passed on. */
  env: Record<string, string>;
  /** A JSON or YAML settings file (`--settings`). */
  settingsFile?: string;
  startTimeoutMs?: number;
}

/** Runs `lattice <command>` to completion (replay, say): its exit code and output. */
export function runLattice(
  args: readonly string[],
  env: Record<string, string>,
  settingsFile?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [bin, ...args, ...(settingsFile ? ['--settings', settingsFile] : [])],
    {
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

function childEnv(env: Record<string, string>): Record<string, string> {
  const inherited = Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined && !entry[0].startsWith('LATTICE_') && !entry[0].startsWith('NODE_TEST'),
  );
  return {
    ...Object.fromEntries(inherited),
    LATTICE_METRICS_PORT: '0',
    LATTICE_VSS_SERVING_PORT: '0',
    LATTICE_VSS_ADMIN_PORT: '0',
    LATTICE_GRPC_PORT: '0',
    LATTICE_LOG_LEVEL: 'warn',
    ...env,
  };
}

/** Starts the command and waits until it printed where it listens (or fails with its output). */
export async function startLatticeVss(options: LatticeVssOptions): Promise<LatticeVssProcess> {
  const args = [bin, ...options.command.split(' '), ...(options.args ?? [])];
  if (options.settingsFile) args.push('--settings', options.settingsFile);
  const child = spawn(process.execPath, args, {
    env: childEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: string) => {
    output += chunk;
  };
  child.stdout!.setEncoding('utf8').on('data', collect);
  child.stderr!.setEncoding('utf8').on('data', collect);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve(code);
    });
  });
  let opsUrl: string | undefined;
  try {
    await eventually(
      () => {
        if (exit)
          throw new Error(`lattice ${options.command} exited (${exit.code ?? exit.signal}):\n${output}`);
        opsUrl = /HTTP \/healthz \/readyz \/metrics\s+(http:\/\/\S+)/.exec(output)?.[1];
        return opsUrl !== undefined && output.includes('Ctrl-C');
      },
      options.startTimeoutMs ?? 120_000,
      `lattice ${options.command} to print its addresses`,
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const servingAddress = /vss\.v1\.SimilaritySearch gRPC .*?\s(\d+\.\d+\.\d+\.\d+:\d+)\s*$/m.exec(
    output,
  )?.[1];
  const adminUrl = /HTTP vss admin API .*?\s(http:\/\/\S+)\s*$/m.exec(output)?.[1];
  return {
    servingAddress,
    opsUrl: opsUrl!,
    adminUrl,
    child,
    output: () => output,
    exited: () => exit,
    exit: () => exited,
    stop: async (timeoutMs = 60_000) => {
      if (!exit) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      return exit!.code;
    },
    kill: async () => {
      if (!exit) {
        child.kill('SIGKILL');
        await exited;
      }
    },
    metric: async (name, labels = {}) => {
      const body = await (await fetch(`${opsUrl}/metrics`)).text();
      return metricSum(body, name, labels);
    },
  };
}

/** The sum of the samples of `name` in a Prometheus text exposition whose labels include `labels`. */
export function metricSum(body: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of body.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const match = /^[^{\s]+(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const text = match[1] ?? '';
    if (Object.entries(labels).every(([k, v]) => text.includes(`${k}="${v}"`))) total += Number(match[2]);
  }
  return total;
}
