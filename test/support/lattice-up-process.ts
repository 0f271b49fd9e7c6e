/**
 * `node bin/lattice.js <args>` as a child process on free ports (every port setting 0), its output
 * collected, for the tests of `lattice up` and other serving commands.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const latticeBin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));

/** Every port `lattice up` opens, set to 0 (any free port). */
export const FREE_PORTS: Readonly<Record<string, string>> = {
  LATTICE_GRPC_PORT: '0',
  LATTICE_METRICS_PORT: '0',
  LATTICE_ORCHESTRATOR_PORT: '0',
  LATTICE_FEATURESTORE_PORT: '0',
  LATTICE_MODELSERVER_PORT: '0',
  LATTICE_COMPUTE_PORT: '0',
  LATTICE_VSS_SERVING_PORT: '0',
  LATTICE_VSS_ADMIN_PORT: '0',
};

/** `nodeArgs` go to Node before the script (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
export function startLattice(args: string[], env: Record<string, string>, nodeArgs: string[] = []) {
  const child = spawn(process.execPath, [...nodeArgs, latticeBin, ...args], {
    env: { ...process.env, ...FREE_PORTS, LATTICE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => {
    output.stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output.stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited };
}
