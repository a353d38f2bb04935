/**
 * How many times a transactional producer may be fenced before the process gives up.
 *
 * INVALID_PRODUCER_EPOCH has two causes: another live instance with the same connector name (hence the
 * same transactionalId) initialised its producer, or the coordinator aborted our transaction after
 * `kafka.transactionTimeoutMs`. The second is worth a rebuild; the first is not: rebuilding fences the
 * other instance, which rebuilds and fences us, and both make no progress. So rebuilds are allowed
 * while fewer than `limit` fencings happened within `windowMs`; the next one is fatal. When two
 * instances fight, the one fenced first (the older) reaches the limit first and stops, as Kafka's own
 * "newest producer wins" rule would have it.
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

  /** Fencings counted in the current window. */
  get recent(): number {
    return this.times.length;
  }
}
