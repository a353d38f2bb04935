/**
 * How many times a transactional producer that was fenced may be rebuilt before the process gives up.
 *
 * INVALID_PRODUCER_EPOCH has two causes: another instance with the same connector name (hence the same
 * transactionalId) initialised its producer, or the coordinator aborted our transaction after
 * `kafka.transactionTimeoutMs`. The sink tells them apart by Kafka's group membership, never by the age of its
 * transaction (a paused instance's transaction is as old as the pause): it rebuilds only when the group
 * `<name>-instances` shows no other instance (transactional-sink.ts). This budget bounds those rebuilds, so a
 * misjudged fencing cannot make two instances take turns for long: rebuilds are allowed while fewer than
 * `limit` fencings happened within `windowMs`; the next one is fatal.
 */
export interface FencingBudgetOptions {
  /** Fencings tolerated within the window; the next is fatal. */
  limit: number;
  windowMs: number;
}

export class FencingBudget {
  private readonly times: number[] = [];

  constructor(private readonly options: FencingBudgetOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 0)
      throw new RangeError('limit must be a non-negative integer');
    if (!(options.windowMs > 0)) throw new RangeError('windowMs must be positive');
  }

  /** Records a fencing at `now` (epoch ms); returns true while a rebuild is still allowed. */
  allowRebuild(now: number): boolean {
    while (this.times.length > 0 && (this.times[0] ?? 0) <= now - this.options.windowMs) this.times.shift();
    this.times.push(now);
    return this.times.length <= this.options.limit;
  }
}
