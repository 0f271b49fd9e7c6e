import {
  ProgressLine,
  type ProgressStream,
  progressBar,
  progressPercent,
} from '../platform/progress-line.js';

/** Where progress goes: a writable stream, drawn as a bar when it is a terminal. */
export type { ProgressStream };

export interface ProgressOptions {
  /** Default: process.stderr. */
  stream?: ProgressStream;
  /** When the stream is not a terminal: one line every this many ms (default 5000). */
  intervalMs?: number;
  /** Injectable clock (ms) for tests. */
  now?: () => number;
}

const numberFormat = new Intl.NumberFormat('en-US');
const TTY_REDRAW_MS = 100;

/**
 * Progress of one load step (a file): rows done, rows per second, and the percentage when the size
 * is known. On a terminal it redraws one line with a bar; otherwise (CI logs, pipes) it prints a
 * plain line every `intervalMs` and a summary at the end, so logs stay readable.
 */
export class ProgressBar {
  readonly #label: string;
  readonly #line: ProgressLine;
  readonly #tty: boolean;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #started: number;
  #lastDraw: number;

  constructor(label: string, options: ProgressOptions = {}) {
    this.#label = label;
    this.#line = new ProgressLine(options.stream ?? process.stderr);
    this.#tty = this.#line.tty;
    this.#intervalMs = options.intervalMs ?? 5000;
    this.#now = options.now ?? (() => performance.now());
    this.#started = this.#now();
    this.#lastDraw = this.#started;
  }

  /** `fraction` in [0, 1] when the total is known. Cheap to call per row: draws only now and then. */
  update(rows: number, fraction: number | undefined, badRows: number): void {
    const now = this.#now();
    if (now - this.#lastDraw < (this.#tty ? TTY_REDRAW_MS : this.#intervalMs)) return;
    this.#lastDraw = now;
    this.#line.draw(this.#text(rows, fraction, badRows, now));
  }

  /** The final state: ends the terminal line, or prints a summary line. */
  finish(rows: number, badRows: number): void {
    const now = this.#now();
    const seconds = Math.max((now - this.#started) / 1000, 1e-3);
    const summary = `${this.#label}: ${numberFormat.format(rows)} rows in ${seconds.toFixed(1)} s (${numberFormat.format(Math.round(rows / seconds))} rows/s)${badRows > 0 ? `, ${numberFormat.format(badRows)} bad` : ''}`;
    this.#line.end(summary);
  }

  #text(rows: number, fraction: number | undefined, badRows: number, now: number): string {
    const seconds = Math.max((now - this.#started) / 1000, 1e-3);
    const rate = `${numberFormat.format(Math.round(rows / seconds))} rows/s`;
    const bad = badRows > 0 ? `, ${numberFormat.format(badRows)} bad` : '';
    const count = `${numberFormat.format(rows)} rows`;
    if (!this.#tty) {
      const percent = fraction === undefined ? '' : ` (${progressPercent(fraction)})`;
      return `${this.#label}: ${count}${percent}, ${rate}${bad}`;
    }
    if (fraction === undefined) return `${this.#label} ${count} ${rate}${bad}`;
    return `${this.#label} ${progressBar(fraction)} ${progressPercent(fraction).padStart(4)} ${count} ${rate}${bad}`;
  }
}
