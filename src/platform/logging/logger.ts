import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: string;
  /** Where JSON lines go; stdout by default. Tests pass a stream to read them back. */
  destination?: NodeJS.WritableStream;
}

/** The root structured logger: one JSON object per line, with `service` on every line. */
export function createLogger(service: string, options: LoggerOptions = {}): Logger {
  const base = { service };
  const config = { level: options.level ?? 'info', base };
  return options.destination ? pino(config, options.destination) : pino(config);
}
