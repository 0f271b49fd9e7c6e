/**
 * Key → partition, shared by every adapter so a key lands on the same partition whichever queue
 * carries it. The hash is Kafka's default partitioner (murmur2 of the UTF-8 key, sign bit cleared,
 * modulo the partition count), so the planned Kafka adapter and Kafka producers outside Lattice
 * agree with it too.
 */

const encoder = new TextEncoder();

/** Kafka's `Utils.murmur2`: 32-bit murmur2 with seed 0x9747b28c, as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length - (length % 4);
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const rest = length % 4;
  if (rest === 3) h ^= data[whole + 2]! << 16;
  if (rest >= 2) h ^= data[whole + 1]! << 8;
  if (rest >= 1) {
    h ^= data[whole]!;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition of `key` on a topic with `partitions` partitions. */
export function partitionForKey(key: string, partitions: number): number {
  return (murmur2(encoder.encode(key)) & 0x7fffffff) % partitions;
}

/**
 * Picks partitions for messages: by key when there is one; else by message id when there is one, so
 * a retried publish lands where the first attempt did; else round-robin per topic.
 */
export class PartitionPicker {
  readonly #next = new Map<string, number>();

  pick(topic: string, partitions: number, key: string | undefined, messageId?: string): number {
    if (key !== undefined) return partitionForKey(key, partitions);
    if (messageId !== undefined) return partitionForKey(messageId, partitions);
    const next = this.#next.get(topic) ?? 0;
    this.#next.set(topic, (next + 1) % partitions);
    return next % partitions;
  }

  forget(topic: string): void {
    this.#next.delete(topic);
  }
}
