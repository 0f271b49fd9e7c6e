/**
 * The progress display of an operation being waited on. On a terminal: one line, redrawn in place
 * (`\r`) on every poll. Elsewhere (a pipe, a CI log): plain lines, one when the status or step
 * changes and otherwise at most one per `intervalMs` while the progress moves, so a log stays short.
 * A tiny renderer rather than a package: one line is all it draws.
 */
import type { OperationView } from './operation-view.js';

/** The part of a stream the renderer writes to (process.stdout, or a capture in tests). */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const BAR_WIDTH = 24;
/** Plain-line mode: the longest silence while progress moves. */
const DEFAULT_PLAIN_INTERVAL_MS = 5_000;

export interface ProgressOptions {
  intervalMs?: number;
  now?: () => number;
}

export class ProgressRenderer {
  readonly #out: OutputStream;
  readonly #tty: boolean;
  readonly #intervalMs: number;
  readonly #now: () => number;
  /** TTY: a line is drawn and not yet ended. */
  #drawn = false;
  #lastPlain:
    | { phase: string; progress: number | undefined; rows: number | undefined; at: number }
    | undefined;

  constructor(out: OutputStream, options: ProgressOptions = {}) {
    this.#out = out;
    this.#tty = out.isTTY === true;
    this.#intervalMs = options.intervalMs ?? DEFAULT_PLAIN_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
  }

  update(operation: OperationView): void {
    if (this.#tty) {
      const line = progressLine(operation, true);
      const width = this.#out.columns;
      const fitted =
        width !== undefined && width > 1 && line.length >= width ? line.slice(0, width - 1) : line;
      // \x1b[K clears what a longer previous line left to the right.
      this.#out.write(`\r${fitted}\x1b[K`);
      this.#drawn = true;
      return;
    }
    const phase = `${operation.status ?? ''}/${operation.step ?? ''}`;
    const at = this.#now();
    const last = this.#lastPlain;
    const moved =
      last !== undefined && (last.progress !== operation.progress || last.rows !== operation.rowsPublished);
    if (last === undefined || last.phase !== phase || (moved && at - last.at >= this.#intervalMs)) {
      this.#out.write(`${progressLine(operation, false)}\n`);
      this.#lastPlain = { phase, progress: operation.progress, rows: operation.rowsPublished, at };
    }
  }

  /** Ends the in-place line, so what is printed next starts on its own line. */
  finish(): void {
    if (this.#drawn) this.#out.write('\n');
    this.#drawn = false;
  }
}

/** `[██████░░░░░░░░░░░░░░░░░░]  25%  INGESTING  12,345 rows published` */
export function progressLine(operation: OperationView, bar: boolean): string {
  const parts: string[] = [];
  const progress = operation.status === 'SUCCEEDED' ? 1 : (operation.progress ?? 0);
  const percent = `${Math.floor(progress * 100)}%`.padStart(4);
  if (bar) {
    const filled = Math.round(progress * BAR_WIDTH);
    parts.push(`[${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}] ${percent}`);
  } else {
    parts.push(`operation ${operation.operationId}: ${percent.trim()}`);
  }
  const phase = operation.step ?? operation.status;
  if (phase !== undefined) parts.push(phase);
  if (operation.step !== undefined && operation.status !== undefined && operation.status !== 'RUNNING') {
    parts.push(`(${operation.status})`);
  }
  if (operation.rowsPublished !== undefined) {
    parts.push(`${operation.rowsPublished.toLocaleString('en-US')} rows published`);
  }
  if (operation.badRowCount !== undefined && operation.badRowCount > 0) {
    parts.push(`${operation.badRowCount.toLocaleString('en-US')} bad rows`);
  }
  return parts.join('  ');
}
