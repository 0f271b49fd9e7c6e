/**
 * Reading a topic once as a consumer group, for tools rather than services: take up to `max`
 * messages, stopping once none arrived for `idleMs`, acknowledging each taken one (a message past
 * `max` is given back for the group's next read). `lattice logs decode --from-queue` uses it on
 * its own queue, and `lattice up` on its embedded queue for the same command run beside it.
 */
import type { Queue } from './queue.js';

export interface ReadMessagesOptions {
  group: string;
  max: number;
  idleMs: number;
}

export interface ReadMessage {
  sequence: number;
  payload: Uint8Array;
}

/** The messages read, in delivery order; rejects with TopicNotFoundError for an unknown topic. */
export async function readMessages(
  queue: Queue,
  topic: string,
  options: ReadMessagesOptions,
): Promise<ReadMessage[]> {
  await queue.describeTopic(topic);
  const taken: ReadMessage[] = [];
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let idle = setTimeout(finish, options.idleMs);
  const consumer = await queue.subscribe(topic, options.group, async (message) => {
    if (taken.length >= options.max) {
      await message.nak(); // not ours to take: the group sees it again next time
      return;
    }
    taken.push({ sequence: message.sequence, payload: message.payload });
    clearTimeout(idle);
    if (taken.length >= options.max) finish();
    else idle = setTimeout(finish, options.idleMs);
    await message.ack();
  });
  try {
    await done;
  } finally {
    clearTimeout(idle);
    await consumer.close();
  }
  return taken;
}
