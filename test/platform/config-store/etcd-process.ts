/**
 * An etcd server owned by one test, for killing and restarting it: free loopback ports, a data dir
 * the test keeps across restarts, output in a log file there.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { eventually } from '../../support/servers.js';

/** Why the `etcd` binary cannot be run here, or undefined when it can. */
export function etcdBinaryProblem(): string | undefined {
  const result = spawnSync('etcd', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (result.error)
    return `the etcd binary is not runnable (${result.error.message}); run scripts/test-services.sh`;
  if (result.status !== 0) return `etcd --version exited with ${result.status}`;
  return undefined;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface EtcdProcessOptions {
  readonly dataDir: string;
  readonly clientPort: number;
  readonly peerPort: number;
}

export class EtcdProcess {
  private exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly logPath: string,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
  }

  /** Starts etcd and resolves once it reports healthy (rejects after 20 s with its log). */
  static async start({ dataDir, clientPort, peerPort }: EtcdProcessOptions): Promise<EtcdProcess> {
    const url = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const logPath = join(dataDir, `..`, `etcd-${clientPort}-${Date.now()}.log`);
    const log = createWriteStream(logPath);
    const child = spawn(
      'etcd',
      [
        '--name=default',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const etcd = new EtcdProcess(child, url, logPath);
    try {
      await eventually(() => etcd.healthy(), 20_000, `etcd on ${url} to report healthy`);
    } catch (err) {
      await etcd.kill();
      const tail = (await readFile(logPath, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
      throw new Error(`${(err as Error).message}; etcd log:\n${tail}`);
    }
    return etcd;
  }

  private async healthy(): Promise<boolean> {
    if (this.child.exitCode !== null) throw new Error(`etcd exited with ${this.child.exitCode}`);
    try {
      const res = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { health?: string };
      return body.health === 'true';
    } catch {
      return false;
    }
  }

  /** SIGKILL, as a crash or an OOM kill would; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }

  get log(): string {
    return this.logPath;
  }
}
