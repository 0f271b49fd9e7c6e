/**
 * A process's CPU time and memory from /proc (Linux), for load tests that check a server's resident
 * memory and that it stops computing once its callers' deadlines have passed.
 */
import { readFileSync } from 'node:fs';

/** User + system CPU time of `pid` in milliseconds, from /proc/<pid>/stat. */
export function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: the fields after it follow the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) are at 11 and 12 after the name and state.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Kernel clock ticks per second (USER_HZ): 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS = 100;

/** Resident set size and its peak (VmHWM) of `pid` in bytes, from /proc/<pid>/status. */
export function memoryOf(pid: number): { rss: number; peakRss: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib('VmRSS'), peakRss: kib('VmHWM') };
}

/** CPU milliseconds `pid` uses per second of wall time over `windowMs`. */
export async function cpuRate(pid: number, windowMs: number): Promise<number> {
  const start = cpuTimeMs(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, windowMs));
  return ((cpuTimeMs(pid) - start) * 1000) / (performance.now() - t0);
}
