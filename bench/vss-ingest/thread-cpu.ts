/**
 * CPU time this process used, on its main thread and on all its threads (PGlite's, the graph build
 * worker, V8's and libuv's helpers), and the minor page faults taken, read from /proc on Linux. On a
 * shared machine the load moves wall-clock rates by 2–3× between runs, while CPU seconds per event
 * move far less: they are how the vss-ingest changes of 2026-11-25 were judged (bench/RESULTS.md,
 * "vss-ingest"). Faults are counted because a first touch of a page costs 12–16 µs on this VM.
 * Undefined elsewhere.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

interface TaskUsage {
  seconds: number;
  minorFaults: number;
}

export interface CpuSeconds {
  main: number;
  all: number;
  /** By thread id (Node leaves its threads unnamed, so ids are all /proc tells them by). */
  byThread: Map<string, TaskUsage>;
}

function usageOf(path: string): TaskUsage {
  const stat = readFileSync(path, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')': state is
  // field 3, minflt 10, utime 14, stime 15 (proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { seconds: (Number(fields[11]) + Number(fields[12])) / TICKS, minorFaults: Number(fields[7]) };
}

/** Threads that ended between two readings drop out of `byThread`; `all` still counts them. */
function byThread(): Map<string, TaskUsage> {
  const usage = new Map<string, TaskUsage>();
  for (const task of readdirSync('/proc/self/task')) {
    try {
      usage.set(task, usageOf(`/proc/self/task/${task}/stat`));
    } catch {
      // The thread ended while the directory was read.
    }
  }
  return usage;
}

export function cpuSeconds(): CpuSeconds | undefined {
  try {
    return {
      main: usageOf(`/proc/self/task/${process.pid}/stat`).seconds,
      all: usageOf('/proc/self/stat').seconds,
      byThread: byThread(),
    };
  } catch {
    return undefined;
  }
}

export interface CpuPerEvent {
  main_us: number;
  all_us: number;
  /** Every other thread that ran, busiest first. */
  other_threads_us: number[];
  /** Minor page faults per 1,000 events: the main thread's, then the others' busiest first. */
  faults_per_1000: { main: number; others: number[] };
}

/** CPU microseconds per event between two readings, main thread and all threads, and faults. */
export function cpuPerEvent(
  from: CpuSeconds | undefined,
  to: CpuSeconds | undefined,
  events: number,
): CpuPerEvent | undefined {
  if (from === undefined || to === undefined) return undefined;
  const us = (seconds: number) => Math.round((1e6 * seconds) / events);
  const perThousand = (faults: number) => Math.round((1000 * faults) / events);
  const others: { us: number; faults: number }[] = [];
  let mainFaults = 0;
  for (const [task, usage] of to.byThread) {
    const before = from.byThread.get(task) ?? { seconds: 0, minorFaults: 0 };
    const faults = perThousand(usage.minorFaults - before.minorFaults);
    if (task === String(process.pid)) mainFaults = faults;
    else if (usage.seconds > before.seconds) others.push({ us: us(usage.seconds - before.seconds), faults });
  }
  others.sort((a, b) => b.us - a.us);
  return {
    main_us: us(to.main - from.main),
    all_us: us(to.all - from.all),
    other_threads_us: others.map((o) => o.us),
    faults_per_1000: { main: mainFaults, others: others.map((o) => o.faults) },
  };
}
