/**
 * Runs `lattice vss <admin subcommand>` in-process, through the same command line as the binary,
 * with captured stdout and stderr (a terminal or not), a 1 ms poll interval and an interrupt the test
 * can fire. The admin API's URL and key come from a settings file, as a user's would.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliIo } from '../../../src/cli/command-kit.js';
import { runLattice } from '../../../src/cli/program.js';

const settingsDir = mkdtempSync(join(tmpdir(), 'lattice-vss-admin-cli-'));
let settingsFiles = 0;

/** A settings file whose host and vss.admin.port make `url`, with `apiKey` as the first API key. */
function settingsFor(url: string, apiKey: string | undefined): string {
  const { hostname, port } = new URL(url);
  const file = join(settingsDir, `settings-${++settingsFiles}.json`);
  const admin = { port: Number(port), ...(apiKey === undefined ? {} : { apiKeys: [apiKey] }) };
  writeFileSync(file, JSON.stringify({ host: hostname, vss: { admin } }));
  return file;
}

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
  const io: CliIo = {
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
  const settings = settingsFor(options.url, options.apiKey);
  const code = await runLattice(['--settings', settings, 'vss', subcommand, ...argv], io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}
