/**
 * Keeps a partition's publish order when a runner starts while an earlier member's messages are
 * still unsettled (it crashed, or was closed, holding a batch).
 *
 * The runner lets the queue hand out many unsettled messages per partition (that is how it batches),
 * so the queue no longer keeps order across a member's death by itself: the dead member's messages
 * come back only after the ack wait (or at once on a journal replay), while newer messages can be
 * delivered to the new member straight away. Applying those newer ones first would let an older
 * event overwrite a newer one of the same key when the old ones return.
 *
 * So, before subscribing, the runner reads the group's position on each partition. When messages
 * are unsettled there, every one of them has a sequence at or below `horizon` (what had been
 * delivered so far), and nothing of the partition may be applied until all of them are back in this
 * runner's hands: either all `awaiting` of them were redelivered here, or the queue shows no
 * unsettled message but this runner's own (the old member settled them after all, or its
 * messages are all back). Then the partition is applied in sequence order as usual.
 */

export class OrderingGate {
  readonly horizon: number;
  readonly #awaiting: number;
  readonly #returned = new Set<number>();
  #open = false;

  /** `unsettled` messages of the partition, all at or below `horizon`, belong to no live member. */
  constructor(horizon: number, unsettled: number) {
    this.horizon = horizon;
    this.#awaiting = unsettled;
    this.#open = unsettled === 0;
  }

  get open(): boolean {
    return this.#open;
  }

  /** A message reached this runner; opens the gate once every earlier member's message is back. */
  received(sequence: number): void {
    if (this.#open || sequence > this.horizon) return;
    this.#returned.add(sequence);
    if (this.#returned.size >= this.#awaiting) this.#open = true;
  }

  /**
   * The queue's view of the partition: open when everything up to the horizon is settled, or when
   * the queue counts no more unsettled messages than `heldBefore`, the messages this runner held
   * when it asked (it settles none while the gate is shut, so those are all still counted, and
   * anything counted beyond them would be someone else's).
   */
  observed(position: { unsettled: number; ackFloor: number }, heldBefore: number): void {
    if (position.unsettled <= heldBefore || position.ackFloor >= this.horizon) this.#open = true;
  }
}
