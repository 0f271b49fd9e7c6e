/**
 * One member of a consumer group on the memory queue. The topic state (memory-topic.ts) decides
 * what is due; this class bounds the handlers running in the member and hands each delivery to the
 * shared delivery rules (delivery.ts).
 */
import { Delivery, type DeliveryContext, type DeliveryTransport, runHandler } from '../delivery.js';
import type { Consumer, MessageHandler } from '../queue.js';
import type { StoredMessage } from './memory-log.js';
import type { GroupPartition, Member, Outstanding } from './memory-topic.js';

const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

export class MemoryConsumer implements Consumer, Member {
  readonly topic: string;
  readonly group: string;
  readonly partitions: readonly number[];
  readonly closed: Promise<void>;
  readonly #handler: MessageHandler;
  readonly #context: DeliveryContext;
  /** Resolves when a publish or settle may report success (the journal's fsync policy). */
  readonly #durable: () => Promise<void>;
  readonly #onStop: (consumer: MemoryConsumer) => void;
  /** Handlers running, and who waits for none to be (drain). */
  #running = 0;
  readonly #idle: Array<() => void> = [];
  #states: GroupPartition[] = [];
  #free: number;
  #nextState = 0;
  /** A partition had a message for this member while every handler slot was taken. */
  #starved = false;
  #stopping = false;
  #markClosed: () => void = () => {};

  constructor(
    handler: MessageHandler,
    context: DeliveryContext,
    durable: () => Promise<void>,
    onStop: (consumer: MemoryConsumer) => void,
  ) {
    this.topic = context.config.topic;
    this.group = context.group;
    this.partitions = context.subscribe.partitions;
    this.#handler = handler;
    this.#context = context;
    this.#durable = durable;
    this.#onStop = onStop;
    this.#free = context.subscribe.concurrency;
    this.closed = new Promise((resolve) => {
      this.#markClosed = resolve;
    });
  }

  /** Joins the group's partitions and starts receiving. */
  attach(states: GroupPartition[]): void {
    this.#states = states;
    for (const state of states) {
      state.maxInFlight = this.#context.subscribe.inFlightPerPartition;
      state.members.push(this);
    }
    for (const state of states) state.pump();
  }

  tryTake(): boolean {
    if (this.#stopping) return false;
    if (this.#free === 0) {
      this.#starved = true;
      return false;
    }
    this.#free--;
    return true;
  }

  run(state: GroupPartition, message: StoredMessage, out: Outstanding): void {
    const { sequence } = message;
    const transport = new MemoryTransport(state, sequence, out.token, this.#durable);
    const delivery = new Delivery(
      {
        topic: this.topic,
        partition: message.partition,
        sequence,
        key: message.key,
        messageId: message.messageId,
        // Frozen when stored: every delivery shares it.
        headers: message.headers,
        // The stored bytes themselves, not a copy (the port's payload is read-only): a copy per
        // delivery was a tenth of the embedded vss consumers' main thread (queue.ts, QueueMessage).
        payload: message.payload,
        publishedAt: new Date(message.publishedAtMs),
        deliveryCount: out.deliveries,
      },
      transport,
      this.#context,
    );
    // Not synchronously: the topic state is in the middle of its delivery loop. runHandler never
    // rejects.
    this.#running++;
    queueMicrotask(() => void runHandler(delivery, this.#handler, this.#context).then(this.#handled));
  }

  /** A handler finished: its slot is free again. */
  readonly #handled = (): void => {
    this.#running--;
    this.#free++;
    if (this.#running === 0) {
      for (const resolve of this.#idle.splice(0)) resolve();
    }
    // Only a partition turned away for want of a slot needs offering it; the others are woken by
    // their own publishes and settles.
    if (this.#starved && !this.#stopping) {
      this.#starved = false;
      this.#pumpAll();
    }
  };

  /** Offers the freed slot to each partition in turn, starting one further each time, so none starves. */
  #pumpAll(): void {
    const count = this.#states.length;
    this.#nextState = (this.#nextState + 1) % Math.max(count, 1);
    for (let k = 0; k < count; k++) this.#states[(this.#nextState + k) % count]!.pump();
  }

  async close(): Promise<void> {
    this.#detach();
    this.#finish();
  }

  async drain(timeoutMs = DEFAULT_DRAIN_TIMEOUT_MS): Promise<void> {
    this.#detach();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    const idle =
      this.#running === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.#idle.push(resolve));
    await Promise.race([idle, timeout]);
    clearTimeout(timer);
    this.#finish();
  }

  #detach(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const state of this.#states) state.removeMember(this);
  }

  #finish(): void {
    this.#onStop(this);
    this.#markClosed();
  }
}

/** Settles one delivery on the topic state, resolving once the journal holds the change. */
class MemoryTransport implements DeliveryTransport {
  readonly #state: GroupPartition;
  readonly #sequence: number;
  /** The delivery a nak or a progress report applies to: an older one's are ignored. */
  readonly #token: number;
  readonly #durable: () => Promise<void>;

  constructor(state: GroupPartition, sequence: number, token: number, durable: () => Promise<void>) {
    this.#state = state;
    this.#sequence = sequence;
    this.#token = token;
    this.#durable = durable;
  }

  ack(): Promise<void> {
    this.#state.ack(this.#sequence);
    return this.#durable();
  }

  nak(delayMs: number): Promise<void> {
    this.#state.nak(this.#sequence, this.#token, delayMs);
    return this.#durable();
  }

  finish(): Promise<void> {
    return this.ack();
  }

  async inProgress(): Promise<void> {
    this.#state.touch(this.#sequence, this.#token);
  }
}
