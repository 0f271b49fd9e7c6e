/**
 * Runs a `lattice` command line in this process, as `node bin/lattice.js` would (the same program,
 * parser and exit statuses), with console output and the CLI's own streams captured. A failure of
 * the command itself rejects with its error, which `lattice` would print with exit status 1.
 */
import { format } from 'node:util';
import type { CliIo } from '../../src/cli/command-kit.js';
import { runLattice } from '../../src/cli/program.js';

export async function runCaptured(argv: string[]): Promise<{ out: string; err: string; exitCode: number }> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: {
      write: (text: string) => {
        out += text;
      },
    },
    stderr: {
      write: (text: string) => {
        err += text;
      },
    },
    onInterrupt: () => () => {},
  };
  const [log, error] = [console.log, console.error];
  console.log = (...args: unknown[]) => {
    out += `${format(...args)}\n`;
  };
  console.error = (...args: unknown[]) => {
    err += `${format(...args)}\n`;
  };
  let exitCode: number;
  try {
    exitCode = await runLattice(argv, io);
  } finally {
    [console.log, console.error] = [log, error];
  }
  return { out: out.replace(/\n$/, ''), err: err.replace(/\n$/, ''), exitCode };
}
