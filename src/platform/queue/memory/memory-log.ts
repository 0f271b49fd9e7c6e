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
  /** The last two answers of #indexAfter. */
  readonly #hints = new Int32Array(2);

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

  /**
   * The index of the first message above `sequence`. Consumers ask near where they asked last (the
   * delivery cursor, the ack floor: each a step further), so the two last answers and the index after
   * each are tried before a binary search.
   */
  #indexAfter(sequence: number): number {
    const hints = this.#hints;
    for (let h = 0; h < 2; h++) {
      const hint = hints[h]!;
      if (this.#isIndexAfter(hint, sequence)) return hint;
      if (this.#isIndexAfter(hint + 1, sequence)) {
        hints[h] = hint + 1;
        return hint + 1;
      }
    }
    let lo = this.#start;
    let hi = this.#messages.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#messages[mid]!.sequence <= sequence) lo = mid + 1;
      else hi = mid;
    }
    hints[1] = hints[0]!;
    hints[0] = lo;
    return lo;
  }

  #isIndexAfter(index: number, sequence: number): boolean {
    const messages = this.#messages;
    if (index < this.#start || index > messages.length) return false;
    return (
      (index === this.#start || messages[index - 1]!.sequence <= sequence) &&
      (index === messages.length || messages[index]!.sequence > sequence)
    );
  }
}
