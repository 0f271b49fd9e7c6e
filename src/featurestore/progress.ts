/** Where progress goes: a writable stream, drawn as a bar when it is a terminal. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface ProgressOptions {
  /** Default: process.stderr. */
  stream?: ProgressStream;
  /** When the stream is not a terminal: one line every this many ms (default 5000). */
  intervalMs?: number;
  /** Injectable clock (ms) for tests. */
  now?: () => number;
}

const numberFormat = new Intl.NumberFormat('en-US');
const BAR_WIDTH = 24;
const TTY_REDRAW_MS = 100;

/**
 * Progress of one load step (a file): rows done, rows per second, and the percentage when the size
 * is known. On a terminal it redraws one line with a bar; otherwise (CI logs, pipes) it prints a
 * plain line every `intervalMs` and a summary at the end, so logs stay readable.
 */
export class ProgressBar {
  readonly #label: string;
  readonly #stream: ProgressStream;
  readonly #tty: boolean;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #started: number;
  #lastDraw: number;

  constructor(label: string, options: ProgressOptions = {}) {
    this.#label = label;
    this.#stream = options.stream ?? process.stderr;
    this.#tty = this.#stream.isTTY === true;
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
    if (this.#tty) this.#stream.write(`\r${this.#line(rows, fraction, badRows, now)}\x1b[K`);
    else this.#stream.write(`${this.#line(rows, fraction, badRows, now)}\n`);
  }

  /** The final state: ends the terminal line, or prints a summary line. */
  finish(rows: number, badRows: number): void {
    const now = this.#now();
    const seconds = Math.max((now - this.#started) / 1000, 1e-3);
    const summary = `${this.#label}: ${numberFormat.format(rows)} rows in ${seconds.toFixed(1)} s (${numberFormat.format(Math.round(rows / seconds))} rows/s)${badRows > 0 ? `, ${numberFormat.format(badRows)} bad` : ''}`;
    this.#stream.write(this.#tty ? `\r${summary}\x1b[K\n` : `${summary}\n`);
  }

  #line(rows: number, fraction: number | undefined, badRows: number, now: number): string {
    const seconds = Math.max((now - this.#started) / 1000, 1e-3);
    const rate = `${numberFormat.format(Math.round(rows / seconds))} rows/s`;
    const bad = badRows > 0 ? `, ${numberFormat.format(badRows)} bad` : '';
    const count = `${numberFormat.format(rows)} rows`;
    if (!this.#tty) {
      const percent = fraction === undefined ? '' : ` (${formatPercent(fraction)})`;
      return `${this.#label}: ${count}${percent}, ${rate}${bad}`;
    }
    if (fraction === undefined) return `${this.#label} ${count} ${rate}${bad}`;
    const filled = Math.round(Math.min(1, Math.max(0, fraction)) * BAR_WIDTH);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}`;
    return `${this.#label} [${bar}] ${formatPercent(fraction).padStart(4)} ${count} ${rate}${bad}`;
  }
}

const formatPercent = (fraction: number): string =>
  `${Math.floor(Math.min(1, Math.max(0, fraction)) * 100)}%`;
