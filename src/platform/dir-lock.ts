import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { LatticeError } from './errors.js';

export interface DirLock {
  release(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(path: string): { pid?: unknown; host?: unknown } {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { pid?: unknown; host?: unknown };
  } catch {
    return {}; // missing, or cut short by a crash while being written: stale
  }
}

/**
 * Takes an exclusive lock on a directory that one process must own (an embedded database, a queue
 * journal), as a sibling file `<dir>.lock` holding the owner's pid and host. A lock left by a process
 * that died is taken over; one held by a live process is FAILED_PRECONDITION naming that pid.
 * Synchronous, so both synchronous and asynchronous openers can use it.
 */
export function lockDirectory(dir: string, what: string): DirLock {
  const path = `${dir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = readOwner(path);
      const pid = typeof owner.pid === 'number' ? owner.pid : undefined;
      const sameHost = owner.host === undefined || owner.host === hostname();
      if (pid !== undefined && (!sameHost || alive(pid))) {
        const who = pid === process.pid ? ' (this process)' : sameHost ? '' : ` on ${String(owner.host)}`;
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `${what} ${dir} is in use by process ${pid}${who} (lock file ${path})`,
        );
      }
      try {
        unlinkSync(path);
      } catch {
        // another process took it over first; the next attempt sees its lock
      }
      continue;
    }
    writeSync(fd, JSON.stringify({ pid: process.pid, host: hostname() }));
    closeSync(fd);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        if (readOwner(path).pid === process.pid) unlinkSync(path);
      },
    };
  }
  throw new LatticeError('FAILED_PRECONDITION', `${what} ${dir}: could not take the lock ${path}`);
}
