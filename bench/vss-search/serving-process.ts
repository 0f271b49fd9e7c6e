/**
 * Starts bench/vss-search/server.ts in a child process (`node --import tsx`, with any extra node
 * flags), waits for its ready line and lets the load generator ask it for stats, CPU time, a CPU
 * profile, or a new ef_search.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ServingCpu, ServingJob, ServingReady, ServingStats } from './fixture.js';

export interface ServingProcess {
  ready: ServingReady;
  pid: number;
  /** Cumulative counters and latency sums of the serving process. */
  stats(): Promise<ServingStats>;
  /** Its CPU time and wall clock now: two readings around a phase give the cores it used. */
  cpu(): Promise<ServingCpu>;
  /** Sets the variant's live ef_search; resolves once serving searches with it. */
  setEfSearch(ef: number): Promise<void>;
  /** Starts a CPU profile of its main thread. */
  startProfile(): Promise<void>;
  /** Stops it and writes it (a .cpuprofile) to `file`. */
  stopProfile(file: string): Promise<void>;
  /** Closes its stdin and waits for it to exit. */
  stop(): Promise<void>;
}

export async function startServingProcess(
  job: ServingJob,
  options: { nodeFlags?: readonly string[] } = {},
): Promise<ServingProcess> {
  const script = fileURLToPath(new URL('./server.ts', import.meta.url));
  const child: ChildProcess = spawn(
    process.execPath,
    [...(options.nodeFlags ?? []), '--import', 'tsx', script, JSON.stringify(job)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines: Interface = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  const early: string[] = [];
  lines.on('line', (line) => {
    // Only JSON lines are replies (node flags such as --trace-gc may print to stdout too).
    if (!line.startsWith('{')) {
      process.stdout.write(`[server] ${line}\n`);
      return;
    }
    const next = waiting.shift();
    if (next) next(line);
    else early.push(line);
  });
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      const queued = early.shift();
      if (queued !== undefined) {
        resolve(queued);
        return;
      }
      waiting.push(resolve);
      void exited.then((code) => reject(new Error(`vss-search server exited with ${code}`)));
    });
  const ready = JSON.parse(await nextLine()) as ServingReady;
  return {
    ready,
    pid: child.pid!,
    stats: async () => {
      child.stdin!.write('stats\n');
      return JSON.parse(await nextLine()) as ServingStats;
    },
    cpu: async () => {
      child.stdin!.write('cpu\n');
      return JSON.parse(await nextLine()) as ServingCpu;
    },
    setEfSearch: async (ef: number) => {
      child.stdin!.write(`ef ${ef}\n`);
      await nextLine();
    },
    startProfile: async () => {
      child.stdin!.write('profile-start\n');
      await nextLine();
    },
    stopProfile: async (file: string) => {
      child.stdin!.write(`profile-stop ${file}\n`);
      await nextLine();
    },
    stop: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}
