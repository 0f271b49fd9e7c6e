/**
 * Runs a CLI command function in this process with console output captured and process.exitCode
 * read and reset, as `lattice <command>` would print and exit.
 */
import type { CliContext } from '../../src/cli/main.js';

export async function runCaptured(
  command: (context: CliContext) => Promise<void>,
  argv: string[],
): Promise<{ out: string; err: string; exitCode: number }> {
  const out: string[] = [];
  const err: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (line: string) => out.push(line);
  console.error = (line: string) => err.push(line);
  process.exitCode = 0;
  try {
    await command({ args: [], argv, settingsFile: undefined });
  } finally {
    [console.log, console.error] = [log, error];
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { out: out.join('\n'), err: err.join('\n'), exitCode };
}
