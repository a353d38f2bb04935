/**
 * The deliveries whose nudge is being offered right now, by replay key (the delivery id, or whatever the
 * signature rule keys replays by). A duplicate of a delivery whose offer is still pending (the sender timed out
 * and retried while a Kafka write was slow) must not be told "taken" before the write is: it waits for that
 * offer and shares its outcome, so a failed first write is answered as failed to the duplicate too, and the id
 * stays retryable.
 *
 * Contract: `run` is called only when `get` returned undefined for the key, with nothing awaited in between
 * (the receiver's check and run are one synchronous step); the offer's promise never rejects (the receiver turns
 * a failure into its outcome), and it settles within the receiver's nudge timeout, which bounds every wait here.
 */
export class PendingOffers<Outcome> {
  private readonly pending = new Map<string, Promise<Outcome>>();

  /** The outcome of the offer pending for `key`; undefined when none is. */
  get(key: string): Promise<Outcome> | undefined {
    return this.pending.get(key);
  }

  /** Runs `offer` as the pending one for `key` until it settles. */
  run(key: string, offer: () => Promise<Outcome>): Promise<Outcome> {
    const outcome = offer().finally(() => this.pending.delete(key));
    this.pending.set(key, outcome);
    return outcome;
  }

  get size(): number {
    return this.pending.size;
  }
}
