/** The memory queue's storage of one partition: its messages in sequence order. */

export interface StoredMessage {
  sequence: number;
  partition: number;
  key: string | undefined;
  messageId: string | undefined;
  headers: Record<string, string>;
  payload: Uint8Array;
  publishedAtMs: number;
  /** Journal segment holding the publish record (0 without a journal). */
  segment: number;
  /** Payload plus headers: what the message counts toward the topic's `maxBytes`. */
  bytes: number;
}

/** One partition's messages in sequence order, dropped from the front. */
export class PartitionLog {
  #messages: StoredMessage[] = [];
  #start = 0;

  get size(): number {
    return this.#messages.length - this.#start;
  }

  push(message: StoredMessage): void {
    this.#messages.push(message);
  }

  first(): StoredMessage | undefined {
    return this.#messages[this.#start];
  }

  shift(): StoredMessage | undefined {
    const message = this.#messages[this.#start];
    if (!message) return undefined;
    this.#messages[this.#start] = undefined as unknown as StoredMessage;
    this.#start++;
    if (this.#start > 1024 && this.#start * 2 > this.#messages.length) {
      this.#messages = this.#messages.slice(this.#start);
      this.#start = 0;
    }
    return message;
  }

  /** The first message with a sequence above `sequence`. */
  after(sequence: number): StoredMessage | undefined {
    return this.#messages[this.#indexAfter(sequence)];
  }

  /** How many messages have a sequence above `sequence`. */
  countAfter(sequence: number): number {
    return this.#messages.length - this.#indexAfter(sequence);
  }

  find(sequence: number): StoredMessage | undefined {
    const message = this.#messages[this.#indexAfter(sequence - 1)];
    return message?.sequence === sequence ? message : undefined;
  }

  /** Messages with a sequence above `sequence`, in order. */
  *from(sequence: number): Generator<StoredMessage> {
    for (let i = this.#indexAfter(sequence); i < this.#messages.length; i++) yield this.#messages[i]!;
  }

  #indexAfter(sequence: number): number {
    let lo = this.#start;
    let hi = this.#messages.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#messages[mid]!.sequence <= sequence) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
