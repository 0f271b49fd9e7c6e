/**
 * CPU time this process used, on its main thread and on all its threads (PGlite's, the graph build
 * worker, V8's and libuv's helpers), read from /proc on Linux. On a shared machine the load moves
 * wall-clock rates by 2–3× between runs, while CPU seconds per event move far less: they are how the
 * vss-ingest changes of 2026-11-25 were judged (bench/RESULTS.md, "vss-ingest"). Undefined elsewhere.
 */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

export interface CpuSeconds {
  main: number;
  all: number;
}

function ticksOf(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

export function cpuSeconds(): CpuSeconds | undefined {
  try {
    return {
      main: ticksOf(`/proc/self/task/${process.pid}/stat`) / TICKS,
      all: ticksOf('/proc/self/stat') / TICKS,
    };
  } catch {
    return undefined;
  }
}

/** Microseconds of CPU per event between two readings, main thread and all threads. */
export function cpuPerEvent(
  from: CpuSeconds | undefined,
  to: CpuSeconds | undefined,
  events: number,
): { main_us: number; all_us: number } | undefined {
  if (from === undefined || to === undefined) return undefined;
  const us = (seconds: number) => Math.round((1e6 * seconds) / events);
  return { main_us: us(to.main - from.main), all_us: us(to.all - from.all) };
}
