/**
 * Runs `lattice vss <admin subcommand>` in-process with captured stdout and stderr (a terminal or
 * not), a 1 ms poll interval and an interrupt the test can fire.
 */
import { runVssAdminCommand, type VssAdminIo } from '../../../src/cli/vss-admin/index.js';

export class CapturedStream {
  text = '';
  readonly isTTY: boolean;
  readonly columns = 120;
  /** Called after each write with everything written so far. */
  onWrite: ((text: string) => void) | undefined;

  constructor(tty: boolean) {
    this.isTTY = tty;
  }

  write(chunk: string): boolean {
    this.text += chunk;
    this.onWrite?.(this.text);
    return true;
  }
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  url: string;
  apiKey?: string;
  tty?: boolean;
  /** Fires the interrupt (Ctrl-C) once stdout contains this text. */
  interruptWhenStdoutHas?: string;
  plainProgressIntervalMs?: number;
}

export async function runCli(subcommand: string, argv: string[], options: RunOptions): Promise<RunResult> {
  const stdout = new CapturedStream(options.tty === true);
  const stderr = new CapturedStream(false);
  let interrupt: (() => void) | undefined;
  const wanted = options.interruptWhenStdoutHas;
  if (wanted !== undefined) {
    stdout.onWrite = (text) => {
      if (text.includes(wanted) && interrupt !== undefined) {
        const fire = interrupt;
        interrupt = undefined;
        fire();
      }
    };
  }
  const io: VssAdminIo = {
    stdout,
    stderr,
    onInterrupt(handler) {
      interrupt = handler;
      return () => {
        interrupt = undefined;
      };
    },
    pollIntervalMs: 1,
    ...(options.plainProgressIntervalMs === undefined
      ? {}
      : { plainProgressIntervalMs: options.plainProgressIntervalMs }),
  };
  const code = await runVssAdminCommand(
    subcommand,
    argv,
    { adminUrl: options.url, ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }) },
    io,
  );
  return { code, stdout: stdout.text, stderr: stderr.text };
}
