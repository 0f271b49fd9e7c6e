import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { LatticeError } from './errors.js';

export interface DirLock {
  release(): void;
}

/** Lock files this process holds: a lock naming our pid that is not among them was left by a predecessor. */
const held = new Set<string>();

/**
 * Whether `pid` is a running process. A process killed a moment ago stays a zombie until its parent
 * reaps it, and signal 0 still reaches a zombie: on Linux its state in /proc (Z, or X while being
 * reaped) says it is dead, so a restart right after a SIGKILL takes the lock over.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const state = procStat(pid)?.[0];
  return state !== 'Z' && state !== 'X';
}

/** The fields of /proc/PID/stat after the command name (state first), or undefined off Linux or once gone. */
function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: the fields follow its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** When process `pid` started (clock ticks since boot, Linux), to tell it from a later process given the same pid. */
function startTime(pid: number): number | undefined {
  // starttime is field 22 of the line, the 20th after the command name.
  const start = Number(procStat(pid)?.[19]);
  return Number.isFinite(start) ? start : undefined;
}

function readOwner(path: string): { pid?: unknown; host?: unknown; start?: unknown } {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { pid?: unknown; host?: unknown; start?: unknown };
  } catch {
    return {}; // missing, or cut short by a crash while being written: stale
  }
}

/**
 * FAILED_PRECONDITION: a live process holds the directory. Its own class, so a caller that can reach
 * the holder another way (the CLI through the holder's ops server) tells it from other failures
 * without reading the message.
 */
export class DirectoryInUseError extends LatticeError {
  constructor(
    message: string,
    /** The process holding the lock. */
    readonly holderPid: number,
  ) {
    super('FAILED_PRECONDITION', message);
  }
}

/**
 * Takes an exclusive lock on a directory that one process must own (an embedded database, a queue
 * journal), as a sibling file `<dir>.lock` created with O_EXCL, holding the owner's pid, host and
 * start time. A lock left by a process that died is taken over (also while it is a zombie not yet reaped
 * by its parent), including one whose pid now belongs
 * to another process (a different start time) or to this one (a restarted container's pid 1); one
 * held by a live process, or already by this one, is FAILED_PRECONDITION naming that pid, followed by
 * `hint` when given. Synchronous, so both synchronous and asynchronous openers can use it.
 */
export function lockDirectory(dir: string, what: string, hint?: string): DirLock {
  const path = `${resolve(dir)}.lock`;
  // The lock sits beside the directory: on a fresh data directory, its parent may not exist yet.
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = holderOf(path);
      if (holder !== undefined) {
        const { pid, host } = holder;
        const who =
          pid === process.pid ? ' (this process: open it once)' : host === undefined ? '' : ` on ${host}`;
        throw new DirectoryInUseError(
          `${what} ${dir} is in use by process ${pid}${who} (lock file ${path})${hint ? `; ${hint}` : ''}`,
          pid,
        );
      }
      try {
        unlinkSync(path);
      } catch {
        // another process took it over first; the next attempt sees its lock
      }
      continue;
    }
    writeSync(fd, JSON.stringify({ pid: process.pid, host: hostname(), start: startTime(process.pid) }));
    closeSync(fd);
    held.add(path);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        held.delete(path);
        if (readOwner(path).pid === process.pid) unlinkSync(path);
      },
    };
  }
  throw new LatticeError('FAILED_PRECONDITION', `${what} ${dir}: could not take the lock ${path}`);
}

/** Who holds a directory's lock: its owner, while that owner lives. */
export interface LockHolder {
  pid: number;
  /** The owner's host, when it is another machine's (a shared volume): its liveness cannot be seen. */
  host?: string;
}

/**
 * Who holds `dir`'s lock (lockDirectory), without taking it or creating anything: undefined when
 * no lock is there, or when its owner is gone (the next opener takes it over).
 */
export function lockHolder(dir: string): LockHolder | undefined {
  return holderOf(`${resolve(dir)}.lock`);
}

function holderOf(path: string): LockHolder | undefined {
  const owner = readOwner(path);
  const pid = typeof owner.pid === 'number' ? owner.pid : undefined;
  if (pid === undefined) return undefined;
  if (owner.host !== undefined && owner.host !== hostname()) return { pid, host: String(owner.host) };
  return held.has(path) || ownedBy(pid, owner.start) ? { pid } : undefined;
}

/** Whether the live process `pid` is the one that wrote the lock (not a stranger reusing its pid). */
function ownedBy(pid: number, start: unknown): boolean {
  if (pid === process.pid) return false; // not in `held`: a predecessor that had our pid
  if (!alive(pid)) return false;
  const now = typeof start === 'number' ? startTime(pid) : undefined;
  return now === undefined || now === start;
}
