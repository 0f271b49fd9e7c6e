/**
 * The memory queue's state for one topic: a log per partition, the de-duplication window, and per
 * consumer group and partition the acknowledgement state and the messages out for delivery. It
 * decides what to deliver next and when (ack waits, nak delays); memory-queue.ts feeds it publishes
 * and journal replays, memory-consumer.ts runs the handlers.
 */

import type { DiscardReason, PartitionLag, TopicConfig } from '../queue.js';
import type { JournalRecord } from './journal.js';
import { PartitionLog, type StoredMessage } from './memory-log.js';

/** Where state changes are made durable: the journal, or nothing for a plain in-memory queue. */
export interface StateSink {
  /** Persists the records before the change is applied (throws when it cannot); the segment id. */
  write(records: JournalRecord[]): number;
  /** A message held in `segment` left the queue. */
  release(segment: number): void;
}

/** A delivered, not yet acknowledged message of one group. */
export interface Outstanding {
  readonly sequence: number;
  deliveries: number;
  /** True while a handler has it; false while it waits for (re)delivery at `dueMs`. */
  handling: boolean;
  /** Ack deadline while handling, earliest redelivery while waiting. */
  dueMs: number;
  /** Identifies the current delivery: a nak from an older delivery is ignored. */
  token: number;
}

/** A consumer member, as the delivery loop sees it. */
export interface Member {
  /** Reserves a handler slot; false when the member is full or stopping. */
  tryTake(): boolean;
  /** Runs the handler for a delivery (asynchronously; the slot is the member's to release). */
  run(state: GroupPartition, message: StoredMessage, delivery: Outstanding): void;
}

/** A consumer group's state on one partition. */
export class GroupPartition {
  readonly topic: TopicState;
  readonly group: string;
  readonly partition: number;
  /** Every message of the partition up to this sequence is acknowledged (or gone). */
  floor = 0;
  /** The highest sequence ever delivered: later messages are new to the group. */
  cursor = 0;
  /** Acknowledged sequences above the floor. */
  readonly acked = new Set<number>();
  readonly outstanding = new Map<number, Outstanding>();
  /** Unsettled messages allowed at once (SubscribeOptions.inFlightPerPartition). */
  maxInFlight = 1;
  readonly members: Member[] = [];
  #nextMember = 0;
  #token = 0;
  /**
   * No outstanding message is due (ack wait over, or redelivery time reached) before this: the
   * delivery loop looks through `outstanding` only from then on, so a wide window
   * (`inFlightPerPartition` in the hundreds) costs nothing per delivery and acknowledgement.
   */
  #dueAt = Number.POSITIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #pumping = false;
  #again = false;

  constructor(topic: TopicState, group: string, partition: number) {
    this.topic = topic;
    this.group = group;
    this.partition = partition;
  }

  get #log(): PartitionLog {
    return this.topic.logs[this.partition]!;
  }

  /** Delivers whatever is due to free members, then arms a timer for the next due message. */
  pump(): void {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        this.#pumpOnce(Date.now());
      } while (this.#again);
    } finally {
      this.#pumping = false;
    }
    this.#arm();
  }

  /** Where the group stands on this partition (see `Queue.groupLag`). */
  lag(): PartitionLag {
    return {
      partition: this.partition,
      pending: this.#log.countAfter(Math.max(this.cursor, this.floor)),
      unsettled: this.outstanding.size,
      delivered: this.cursor,
      ackFloor: this.floor,
    };
  }

  /** Acknowledges `sequence` (from any delivery of it). `journal: false` while replaying. */
  ack(sequence: number, journal = true): void {
    if (sequence <= this.floor || this.acked.has(sequence)) return;
    if (!this.#log.find(sequence)) {
      this.outstanding.delete(sequence);
      return;
    }
    if (journal) {
      this.topic.sink.write([
        {
          type: 'ack',
          topic: this.topic.config.topic,
          group: this.group,
          partition: this.partition,
          sequence,
        },
      ]);
    }
    this.outstanding.delete(sequence);
    this.acked.add(sequence);
    if (sequence > this.cursor) this.cursor = sequence;
    for (const message of this.#log.from(this.floor)) {
      if (!this.acked.delete(message.sequence)) break;
      this.floor = message.sequence;
    }
    if (journal) {
      this.topic.discardPartition(this.partition, Date.now());
      this.pump();
    }
  }

  /** Redeliver after `delayMs`, if `token` is still the current delivery. */
  nak(sequence: number, token: number, delayMs: number): void {
    const entry = this.outstanding.get(sequence);
    if (!entry || entry.token !== token || !entry.handling) return;
    entry.handling = false;
    entry.dueMs = Date.now() + delayMs;
    this.#dueBy(entry.dueMs);
    this.pump();
  }

  /** Restarts the ack-wait clock of the current delivery. */
  touch(sequence: number, token: number): void {
    const entry = this.outstanding.get(sequence);
    if (!entry || entry.token !== token || !entry.handling) return;
    // Later than before: the loop's bound and timer stay valid (at worst they look early).
    entry.dueMs = Date.now() + this.topic.config.ackWaitMs;
  }

  /** Replay of a delivery record: the message is out, with `count` deliveries so far. */
  restoreDelivery(sequence: number, count: number): void {
    if (sequence <= this.floor || this.acked.has(sequence) || !this.#log.find(sequence)) return;
    this.outstanding.set(sequence, { sequence, deliveries: count, handling: false, dueMs: 0, token: 0 });
    this.#dueAt = 0;
    if (sequence > this.cursor) this.cursor = sequence;
  }

  /** Messages up to `sequence` left the topic (retention): forget them. */
  forgetThrough(sequence: number): void {
    if (sequence <= this.floor) return;
    this.floor = sequence;
    if (this.cursor < sequence) this.cursor = sequence;
    for (const s of this.acked) if (s <= sequence) this.acked.delete(s);
    for (const s of this.outstanding.keys()) if (s <= sequence) this.outstanding.delete(s);
  }

  removeMember(member: Member): void {
    const index = this.members.indexOf(member);
    if (index >= 0) this.members.splice(index, 1);
    if (this.members.length === 0) this.stop();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  #pumpOnce(now: number): void {
    if (this.members.length === 0) return;
    if (now >= this.#dueAt && !this.#redeliver(now)) return;
    while (this.outstanding.size < this.maxInFlight) {
      const message = this.#log.after(Math.max(this.cursor, this.floor));
      if (!message) return;
      const member = this.#freeMember();
      if (!member) return;
      this.#deliver(member, message, undefined, now);
    }
  }

  /**
   * Ends ack waits that ran out and redelivers what is due, lowest sequence first (before anything
   * new), then recomputes `#dueAt`. False when members ran out of slots with messages still due.
   */
  #redeliver(now: number): boolean {
    const due: Outstanding[] = [];
    for (const entry of this.outstanding.values()) {
      if (entry.handling && entry.dueMs <= now) {
        entry.handling = false;
        entry.dueMs = now;
      }
      if (!entry.handling && entry.dueMs <= now) due.push(entry);
    }
    due.sort((a, b) => a.sequence - b.sequence);
    let complete = true;
    for (const entry of due) {
      const message = this.#log.find(entry.sequence);
      if (!message) {
        this.outstanding.delete(entry.sequence);
        continue;
      }
      const member = this.#freeMember();
      if (!member) {
        complete = false;
        break;
      }
      this.#deliver(member, message, entry, now);
    }
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.outstanding.values()) if (entry.dueMs < next) next = entry.dueMs;
    this.#dueAt = next;
    return complete;
  }

  #freeMember(): Member | undefined {
    const count = this.members.length;
    for (let k = 0; k < count; k++) {
      const index = (this.#nextMember + k) % count;
      const member = this.members[index]!;
      if (member.tryTake()) {
        this.#nextMember = (index + 1) % count;
        return member;
      }
    }
    return undefined;
  }

  #deliver(member: Member, message: StoredMessage, existing: Outstanding | undefined, now: number): void {
    const deliveries = (existing?.deliveries ?? 0) + 1;
    this.topic.sink.write([
      {
        type: 'deliver',
        topic: this.topic.config.topic,
        group: this.group,
        partition: this.partition,
        sequence: message.sequence,
        count: deliveries,
      },
    ]);
    const entry: Outstanding = existing ?? {
      sequence: message.sequence,
      deliveries,
      handling: true,
      dueMs: 0,
      token: 0,
    };
    entry.deliveries = deliveries;
    entry.handling = true;
    entry.dueMs = now + this.topic.config.ackWaitMs;
    entry.token = ++this.#token;
    this.outstanding.set(message.sequence, entry);
    this.#dueBy(entry.dueMs);
    if (message.sequence > this.cursor) this.cursor = message.sequence;
    member.run(this, message, { ...entry });
  }

  /** Something becomes due at `dueMs`: the delivery loop must look again by then. */
  #dueBy(dueMs: number): void {
    if (dueMs < this.#dueAt) this.#dueAt = dueMs;
  }

  /** Wakes the loop when the earliest outstanding message falls due, unless a timer already will. */
  #arm(): void {
    if (this.members.length === 0 || this.outstanding.size === 0) {
      this.stop();
      return;
    }
    if (this.#dueAt === Number.POSITIVE_INFINITY || this.#timerAt <= this.#dueAt) return;
    clearTimeout(this.#timer);
    this.#timerAt = this.#dueAt;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, this.#dueAt - Date.now()) + 1,
    );
  }
}

/** One topic: partition logs, de-duplication and groups. */
export class TopicState {
  config: TopicConfig;
  /** Swapped from a no-op to the journal once a replay is over. */
  sink: StateSink;
  readonly logs: PartitionLog[];
  readonly groups = new Map<string, GroupPartition[]>();
  nextSequence = 1;
  /** Bytes of the messages the partitions hold (StoredMessage.bytes). */
  bytes = 0;
  /**
   * Told of each message retention discards before every group settled it. Unset while a journal
   * replays: those discards happened, and were reported, in the process that wrote the journal.
   */
  report: ((reason: DiscardReason) => void) | undefined;
  readonly #dedup = new Map<string, { partition: number; sequence: number; atMs: number }>();
  #dedupOrder: Array<{ id: string; atMs: number }> = [];
  #dedupStart = 0;

  constructor(config: TopicConfig, sink: StateSink) {
    this.config = config;
    this.sink = sink;
    this.logs = Array.from({ length: config.partitions }, () => new PartitionLog());
  }

  /** The stored original of `messageId` if it is inside the de-duplication window. */
  duplicateOf(messageId: string, nowMs: number): { partition: number; sequence: number } | undefined {
    this.pruneDedup(nowMs);
    return this.#dedup.get(messageId);
  }

  /** Adds a message (already journaled, or replayed) and wakes the groups of its partition. */
  append(message: StoredMessage, wake = true): void {
    this.logs[message.partition]!.push(message);
    this.bytes += message.bytes;
    if (message.sequence >= this.nextSequence) this.nextSequence = message.sequence + 1;
    if (message.messageId !== undefined) {
      this.#dedup.set(message.messageId, {
        partition: message.partition,
        sequence: message.sequence,
        atMs: message.publishedAtMs,
      });
      this.#dedupOrder.push({ id: message.messageId, atMs: message.publishedAtMs });
    }
    if (!wake) return;
    this.enforceMaxBytes();
    for (const partitions of this.groups.values()) partitions[message.partition]!.pump();
  }

  /** Messages the partitions hold. */
  get messages(): number {
    let count = 0;
    for (const log of this.logs) count += log.size;
    return count;
  }

  /** While the topic holds more than `maxBytes`, discards its oldest message across partitions. */
  enforceMaxBytes(): void {
    const max = this.config.maxBytes;
    if (max === undefined) return;
    while (this.bytes > max) {
      let oldest = -1;
      let sequence = Number.POSITIVE_INFINITY;
      for (let p = 0; p < this.logs.length; p++) {
        const head = this.logs[p]!.first();
        if (head && head.sequence < sequence) {
          sequence = head.sequence;
          oldest = p;
        }
      }
      if (oldest < 0) return;
      this.#dropHead(oldest, 'bytes');
    }
  }

  /** The group's per-partition state, created (empty: it sees every retained message) if new. */
  group(name: string): { partitions: GroupPartition[]; created: boolean } {
    const existing = this.groups.get(name);
    if (existing) return { partitions: existing, created: false };
    const partitions = this.logs.map((_, p) => new GroupPartition(this, name, p));
    this.groups.set(name, partitions);
    return { partitions, created: true };
  }

  /** Drops messages every group acknowledged, and messages past retention (age, bytes), from all partitions. */
  discard(nowMs: number): void {
    for (let p = 0; p < this.logs.length; p++) this.discardPartition(p, nowMs);
    this.enforceMaxBytes();
    this.pruneDedup(nowMs);
  }

  discardPartition(partition: number, nowMs: number): void {
    const log = this.logs[partition]!;
    let ackedByAll = Number.NEGATIVE_INFINITY;
    if (this.groups.size > 0) {
      ackedByAll = Number.POSITIVE_INFINITY;
      for (const partitions of this.groups.values())
        ackedByAll = Math.min(ackedByAll, partitions[partition]!.floor);
    }
    const expiredBefore = nowMs - this.config.retentionMs;
    for (let head = log.first(); head; head = log.first()) {
      const acked = head.sequence <= ackedByAll;
      if (!acked && head.publishedAtMs > expiredBefore) break;
      this.#dropHead(partition, acked ? undefined : 'age');
    }
  }

  /**
   * Removes the partition's oldest message. `reason`: retention took it, so the groups forget it, and
   * it is reported unless every group had already acknowledged it (out of order, above its floor).
   */
  #dropHead(partition: number, reason: DiscardReason | undefined): void {
    const head = this.logs[partition]!.shift();
    if (!head) return;
    this.bytes -= head.bytes;
    this.sink.release(head.segment);
    if (reason === undefined) return;
    let settled = this.groups.size > 0;
    for (const partitions of this.groups.values()) {
      const gp = partitions[partition]!;
      if (head.sequence > gp.floor && !gp.acked.has(head.sequence)) settled = false;
      gp.forgetThrough(head.sequence);
    }
    if (!settled) this.report?.(reason);
  }

  pruneDedup(nowMs: number): void {
    const order = this.#dedupOrder;
    const cutoff = nowMs - this.config.dedupWindowMs;
    while (this.#dedupStart < order.length && order[this.#dedupStart]!.atMs <= cutoff) {
      const { id, atMs } = order[this.#dedupStart]!;
      if (this.#dedup.get(id)?.atMs === atMs) this.#dedup.delete(id);
      this.#dedupStart++;
    }
    if (this.#dedupStart > 1024 && this.#dedupStart * 2 > order.length) {
      this.#dedupOrder = order.slice(this.#dedupStart);
      this.#dedupStart = 0;
    }
  }

  /** Everything the topic holds leaves: timers stop, journal segments are released. */
  remove(): void {
    for (const partitions of this.groups.values()) for (const gp of partitions) gp.stop();
    for (const log of this.logs) for (let m = log.shift(); m; m = log.shift()) this.sink.release(m.segment);
    this.bytes = 0;
  }

  stop(): void {
    for (const partitions of this.groups.values()) for (const gp of partitions) gp.stop();
  }
}
