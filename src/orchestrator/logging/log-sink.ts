/**
 * Where the inference logger stores encoded `OrchestratorLog` records: the queue in production
 * (queue-log-sink.ts), or a file of length-delimited records for offline use (file-log-sink.ts).
 */
export interface LogSinkWriteOptions {
  /** The request's tracking id: a request's records stay together, in order. */
  readonly key: string;
  /** Unique per record and stable across retries, so a retried write is stored once. */
  readonly messageId: string;
}

export interface LogSink {
  /** Where records go, for log lines (e.g. `queue topic orchestrator-inference-logs`). */
  readonly description: string;
  /**
   * Stores one serialized record. Rejects on failure; a `MessageTooLargeError` (from the queue
   * port) tells the logger to split the record rather than retry it.
   */
  write(record: Uint8Array, options: LogSinkWriteOptions): Promise<void>;
  /** Releases what the sink holds (not the queue it was given). */
  close(): Promise<void>;
}
