import { open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { LatticeError } from './errors.js';

export interface DirLock {
  release(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes an exclusive lock on a directory that one process must own (an embedded database, a queue
 * journal), as a sibling file `<dir>.lock` holding the owner's pid. A lock left by a process that
 * died is taken over; one held by a live process is FAILED_PRECONDITION naming that pid.
 */
export async function lockDirectory(dir: string, what: string): Promise<DirLock> {
  const path = `${dir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname() }));
      await handle.close();
      let released = false;
      return {
        release: async () => {
          if (released) return;
          released = true;
          await unlink(path).catch(() => {});
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let owner: { pid?: unknown; host?: unknown } = {};
      try {
        owner = JSON.parse(await readFile(path, 'utf8')) as typeof owner;
      } catch {
        // An unreadable lock file was cut short by a crash while being written: stale.
      }
      const pid = typeof owner.pid === 'number' ? owner.pid : undefined;
      const sameHost = owner.host === undefined || owner.host === hostname();
      if (pid !== undefined && (!sameHost || alive(pid))) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `${what} ${dir} is in use by process ${pid}${sameHost ? '' : ` on ${String(owner.host)}`} (lock file ${path})`,
        );
      }
      await unlink(path).catch(() => {});
    }
  }
  throw new LatticeError('FAILED_PRECONDITION', `${what} ${dir}: could not take the lock ${path}`);
}
