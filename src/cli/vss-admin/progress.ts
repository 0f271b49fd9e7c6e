/**
 * The progress display of an operation being waited on (the platform's progress line). On a
 * terminal: one line, redrawn in place on every poll. Elsewhere (a pipe, a CI log): plain lines, one
 * when the status or step changes and otherwise at most one per `intervalMs` while the progress
 * moves, so a log stays short.
 */
import {
  ProgressLine,
  type ProgressStream,
  progressBar,
  progressPercent,
} from '../../platform/progress-line.js';
import type { OperationView } from './operation-view.js';

/** The part of a stream the renderer writes to (process.stdout, or a capture in tests). */
export type OutputStream = ProgressStream;
/** Plain-line mode: the longest silence while progress moves. */
const DEFAULT_PLAIN_INTERVAL_MS = 5_000;

export interface ProgressOptions {
  intervalMs?: number;
  now?: () => number;
}

export class ProgressRenderer {
  readonly #line: ProgressLine;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #lastPlain:
    | { phase: string; progress: number | undefined; rows: number | undefined; at: number }
    | undefined;

  constructor(out: OutputStream, options: ProgressOptions = {}) {
    this.#line = new ProgressLine(out);
    this.#intervalMs = options.intervalMs ?? DEFAULT_PLAIN_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
  }

  update(operation: OperationView): void {
    if (this.#line.tty) {
      this.#line.draw(progressLine(operation, true));
      return;
    }
    const phase = `${operation.status ?? ''}/${operation.step ?? ''}`;
    const at = this.#now();
    const last = this.#lastPlain;
    const moved =
      last !== undefined && (last.progress !== operation.progress || last.rows !== operation.rowsPublished);
    if (last === undefined || last.phase !== phase || (moved && at - last.at >= this.#intervalMs)) {
      this.#line.draw(progressLine(operation, false));
      this.#lastPlain = { phase, progress: operation.progress, rows: operation.rowsPublished, at };
    }
  }

  /** Ends the in-place line, so what is printed next starts on its own line. */
  finish(): void {
    this.#line.end();
  }
}

/** `[██████░░░░░░░░░░░░░░░░░░]  25%  INGESTING  12,345 rows published` */
export function progressLine(operation: OperationView, bar: boolean): string {
  const parts: string[] = [];
  const progress = operation.status === 'SUCCEEDED' ? 1 : (operation.progress ?? 0);
  const percent = progressPercent(progress);
  if (bar) parts.push(`${progressBar(progress)} ${percent.padStart(4)}`);
  else parts.push(`operation ${operation.operationId}: ${percent}`);
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
