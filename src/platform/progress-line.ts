/**
 * One line of progress on a stream, the display behind every long command (a feature store load, a
 * vss-admin operation being waited on). On a terminal the line is redrawn in place (`\r`, then
 * `\x1b[K` to clear what a longer previous line left) and cut to the terminal's width; elsewhere (a
 * pipe, a CI log) each draw is a line of its own, and the caller decides how seldom to draw. A tiny
 * renderer rather than a package: one line is all it draws.
 */

/** The part of a stream progress is written to (process.stderr or stdout, or a capture in tests). */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const BAR_WIDTH = 24;

const clamp = (fraction: number): number => Math.min(1, Math.max(0, fraction));

/** `[██████░░░░░░░░░░░░░░░░░░]` for 0.25. */
export function progressBar(fraction: number, width = BAR_WIDTH): string {
  const filled = Math.round(clamp(fraction) * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}

/** `25%` for 0.25 (rounded down: 100% only when done). */
export function progressPercent(fraction: number): string {
  return `${Math.floor(clamp(fraction) * 100)}%`;
}

export class ProgressLine {
  readonly #stream: ProgressStream;
  /** Terminal: a line is drawn and not yet ended. */
  #drawn = false;

  constructor(stream: ProgressStream) {
    this.#stream = stream;
  }

  /** Whether the stream is a terminal (redrawn in place) rather than a log (a line per draw). */
  get tty(): boolean {
    return this.#stream.isTTY === true;
  }

  draw(text: string): void {
    if (!this.tty) {
      this.#stream.write(`${text}\n`);
      return;
    }
    this.#stream.write(`\r${this.#fitted(text)}\x1b[K`);
    this.#drawn = true;
  }

  /**
   * Ends the line, so what is printed next starts on its own: with `text`, its final state (drawn
   * over the in-place line on a terminal, uncut: a summary may wrap; a line of its own elsewhere).
   */
  end(text?: string): void {
    if (text !== undefined) this.#stream.write(this.tty ? `\r${text}\x1b[K\n` : `${text}\n`);
    else if (this.#drawn) this.#stream.write('\n');
    this.#drawn = false;
  }

  #fitted(text: string): string {
    const width = this.#stream.columns;
    return width !== undefined && width > 1 && text.length >= width ? text.slice(0, width - 1) : text;
  }
}
