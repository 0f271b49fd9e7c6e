/**
 * One member of a consumer group on JetStream: a pull subscription on the durable consumer of
 * every partition it handles. The server enforces the group-wide limits (ack wait, at most
 * `inFlightPerPartition` unsettled messages per partition); this class bounds the handlers running
 * in this member and hands each message to the shared delivery rules (delivery.ts).
 */
import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { describeError } from '../../errors.js';
import { Delivery, type DeliveryContext, type DeliveryTransport, runHandler } from '../delivery.js';
import type { Consumer, MessageHandler } from '../queue.js';
import { KEY_HEADER, MESSAGE_ID_HEADER } from '../validation.js';
import { durableName } from './jetstream-topics.js';
import { Slots } from './slots.js';

const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/**
 * Naks with a delay of at least 1 ms. A plain nak of the newest delivered message makes the server
 * step its delivered position back while still counting the message as pending acknowledgement, so
 * consumer info would count it twice (in num_pending and num_ack_pending) and `groupLag` with it; a
 * delayed nak sends it through the redelivery queue like any other.
 */
function handBack(message: JsMsg, delayMs = 0): void {
  message.nak(Math.max(1, delayMs));
}
const PULL_EXPIRES_MS = 10_000;

/**
 * How one delivered message is settled. An ack is sent without a reply subject and confirmed by a
 * round trip the acks of the same moment share (the server answers it only after reading everything
 * sent before it): a reply per ack costs the server, and the client an error object with a stack per
 * request. A class rather than closures per message: a message's settling then costs one object.
 */
class JetStreamTransport implements DeliveryTransport {
  constructor(
    private readonly message: JsMsg,
    private readonly received: () => Promise<void>,
  ) {}

  ack(): Promise<void> {
    this.message.ack();
    return this.received();
  }

  async nak(delayMs: number): Promise<void> {
    handBack(this.message, delayMs);
  }

  finish(): Promise<void> {
    return this.ack();
  }

  async inProgress(): Promise<void> {
    this.message.working();
  }
}

export class JetStreamConsumer implements Consumer {
  readonly topic: string;
  readonly group: string;
  readonly partitions: readonly number[];
  readonly closed: Promise<void>;
  readonly #js: JetStreamClient;
  readonly #handler: MessageHandler;
  readonly #context: DeliveryContext;
  readonly #memberSlots: Slots;
  readonly #running = new Set<Promise<void>>();
  readonly #subscriptions: ConsumerMessages[] = [];
  readonly #loops: Promise<void>[] = [];
  readonly #onStop: (consumer: JetStreamConsumer) => void;
  /** Resolves once the server has received everything sent on the connection before the call. */
  readonly #received: () => Promise<void>;
  #stopping = false;
  /** The member's and each partition's handler slots, closed on stop. */
  readonly #slots: Slots[] = [];
  #markClosed: () => void = () => {};

  constructor(
    js: JetStreamClient,
    handler: MessageHandler,
    context: DeliveryContext,
    received: () => Promise<void>,
    onStop: (consumer: JetStreamConsumer) => void,
  ) {
    this.#received = received;
    this.topic = context.config.topic;
    this.group = context.group;
    this.partitions = context.subscribe.partitions;
    this.#js = js;
    this.#handler = handler;
    this.#context = context;
    this.#memberSlots = new Slots(context.subscribe.concurrency);
    this.#slots.push(this.#memberSlots);
    this.#onStop = onStop;
    this.closed = new Promise((resolve) => {
      this.#markClosed = resolve;
    });
  }

  /** Opens the pull subscriptions; the durable consumers must exist. */
  async start(): Promise<void> {
    const { inFlightPerPartition } = this.#context.subscribe;
    try {
      for (const partition of this.partitions) {
        const consumer = await this.#js.consumers.get(this.topic, durableName(this.group, partition));
        const messages = await consumer.consume({
          max_messages: Math.max(inFlightPerPartition, 1),
          expires: PULL_EXPIRES_MS,
          abort_on_missing_resource: true,
        });
        this.#subscriptions.push(messages);
        this.#loops.push(this.#loop(partition, messages));
        // Closed while starting (the subscribe timed out): no more subscriptions, this one closed.
        if (this.#stopping) {
          void messages.close().catch(() => undefined);
          break;
        }
      }
    } catch (err) {
      await this.close();
      throw err;
    }
    void Promise.all(this.#loops).then(() => this.#finish());
  }

  async close(): Promise<void> {
    // Running handlers are not waited for: they may still settle their messages, or leave them to
    // be redelivered after ackWait.
    this.#stop();
    this.#finish();
  }

  async drain(timeoutMs = DEFAULT_DRAIN_TIMEOUT_MS): Promise<void> {
    this.#stop();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([Promise.all([...this.#loops, ...this.#running]), timeout]);
    clearTimeout(timer);
    this.#finish();
  }

  #stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const slots of this.#slots) slots.close();
    for (const messages of this.#subscriptions) void messages.close().catch(() => undefined);
  }

  #finish(): void {
    this.#stopping = true;
    this.#onStop(this);
    this.#markClosed();
  }

  async #loop(partition: number, messages: ConsumerMessages): Promise<void> {
    const partitionSlots = new Slots(this.#context.subscribe.inFlightPerPartition);
    this.#slots.push(partitionSlots);
    if (this.#stopping) partitionSlots.close();
    try {
      for await (const message of messages) {
        if (this.#stopping) {
          handBack(message);
          continue;
        }
        // A stop closes the slots: the running handlers keep theirs, this message goes back.
        // Most messages find both slots free: taking them at once spares two awaits per message.
        const gotSlots =
          (partitionSlots.tryAcquire() || (await partitionSlots.acquire())) &&
          (this.#memberSlots.tryAcquire() || (await this.#memberSlots.acquire()));
        if (!gotSlots || this.#stopping) {
          handBack(message);
          continue;
        }
        const run = this.#handle(partition, message).finally(() => {
          partitionSlots.release();
          this.#memberSlots.release();
          this.#running.delete(run);
        });
        this.#running.add(run);
        // One at a time: finish before the loop asks the server for more, so a member that stops
        // never leaves a pull request open that could catch the partition's next message.
        if (this.#context.subscribe.inFlightPerPartition === 1) await run;
      }
    } catch (err) {
      if (!this.#stopping) {
        this.#context.logger.error(
          { topic: this.topic, group: this.group, partition, err: describeError(err) },
          'queue consumer stopped: its JetStream subscription failed',
        );
      }
    }
  }

  #handle(partition: number, message: JsMsg): Promise<void> {
    const headers: Record<string, string> = {};
    let key: string | undefined;
    let messageId: string | undefined;
    for (const name of message.headers?.keys() ?? []) {
      const value = message.headers?.get(name) ?? '';
      if (name === KEY_HEADER) key = value;
      else if (name === MESSAGE_ID_HEADER) messageId = value;
      else if (!/^nats-/i.test(name)) headers[name] = value;
    }
    const transport = new JetStreamTransport(message, this.#received);
    const delivery = new Delivery(
      {
        topic: this.topic,
        partition,
        sequence: message.seq,
        key,
        messageId,
        headers,
        payload: message.data,
        publishedAt: message.time,
        deliveryCount: message.info.deliveryCount,
      },
      transport,
      this.#context,
    );
    return runHandler(delivery, this.#handler, this.#context);
  }
}
