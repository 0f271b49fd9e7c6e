/**
 * What a subcommand runs with: the client, its parsed flags and where its output goes. Output
 * streams, the interrupt and the poll interval are injected so the commands run in-process in tests
 * exactly as they do under `lattice`.
 */
import type { CliIo } from '../command-kit.js';
import type { AdminClient } from './admin-client.js';
import type { OutputStream } from './progress.js';

export interface CommandContext {
  client: AdminClient;
  flags: ReadonlyMap<string, string | boolean | number>;
  positionals: readonly string[];
  /** `--json`: the API's JSON answer on stdout instead of a summary. */
  json: boolean;
  io: CliIo;
}

export const stringFlag = (context: CommandContext, name: string): string | undefined => {
  const value = context.flags.get(name);
  return typeof value === 'string' ? value : undefined;
};

export function printLine(out: OutputStream, text: string): void {
  out.write(`${text}\n`);
}

export function printJson(out: OutputStream, body: unknown): void {
  out.write(`${JSON.stringify(body, null, 2)}\n`);
}
