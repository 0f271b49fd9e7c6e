/**
 * `npm start` stops cleanly when its own pid is signalled, as supervisors (Docker, systemd, CI) do:
 * SIGTERM and SIGINT to the npm process reach `lattice up`, which drains, prints its last line and
 * exits 0, leaving no process, port or lock behind.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { FREE_PORTS } from '../support/lattice-up-process.js';
import { eventually } from '../support/servers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The pids of processes whose command line mentions `marker` (the test's data directory). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (cmdline.includes(marker)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * One data directory for both signals: the second `npm start` is a restart of what the first
 * stopped (so it also shows a signalled stop leaves a directory the next start opens), and it skips
 * the vss demo's onboarding, which only a fresh directory needs.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'lattice-npm-start-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  describe(`npm start, ${signal} to its pid`, () => {
    test('every part stops, exit 0, no process, port or lock left', { timeout: 240_000 }, async () => {
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: root,
        env: { ...process.env, ...FREE_PORTS, LATTICE_DATA_DIR: dataDir, LATTICE_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      npm.stdout.on('data', (d: Buffer) => {
        output += d.toString();
      });
      npm.stderr.on('data', (d: Buffer) => {
        output += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      await eventually(() => output.includes('Ctrl-C'), 180_000, `npm start to be up:\n${output}`);
      const opsPort = Number(
        /HTTP \/healthz \/readyz \/metrics(?: \/models)?\s+https?:\/\/[^:]+:(\d+)/.exec(output)?.[1],
      );
      assert.ok(opsPort > 0, output);
      npm.kill(signal);
      const code = await exited;
      assert.equal(code, 0, output);
      await eventually(() => processesWith(dataDir).length === 0, 30_000, 'no lattice process left');
      assert.ok(await portFree(opsPort), `port ${opsPort} is still bound`);
      for (const lock of ['vectordb.lock', 'vectordb-production.lock', 'sql.lock', 'queue.lock']) {
        assert.equal(existsSync(join(dataDir, lock)), false, `${lock} left behind`);
      }
      assert.match(output, /Lattice stopped\.\s*$/);
    });
  });
}
