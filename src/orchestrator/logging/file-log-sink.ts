import { appendFile } from 'node:fs/promises';
import { frameRecord } from './log-file.js';
import type { LogSink } from './log-sink.js';

/**
 * Appends records to a local log file (see log-file.ts), for offline use and debugging: the same
 * records the queue would carry, readable with `lattice logs decode --file`. Writes are serialized
 * so records never interleave. Message ids are not kept: a retried write may repeat a record.
 */
export class FileLogSink implements LogSink {
  readonly description: string;
  private tail: Promise<void> = Promise.resolve();

  constructor(readonly path: string) {
    this.description = `file ${path}`;
  }

  write(record: Uint8Array): Promise<void> {
    const framed = frameRecord(record);
    const next = this.tail.then(() => appendFile(this.path, framed));
    this.tail = next.catch(() => {});
    return next;
  }

  close(): Promise<void> {
    return this.tail;
  }
}
