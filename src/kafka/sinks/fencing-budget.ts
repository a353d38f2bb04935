/**
 * How many times a transactional producer whose transaction timed out may be rebuilt before the process
 * gives up.
 *
 * INVALID_PRODUCER_EPOCH has two causes: another live instance with the same connector name (hence the
 * same transactionalId) initialised its producer, or the coordinator aborted our transaction after
 * `kafka.transactionTimeoutMs`. The sink tells them apart by the age of its transaction: only the second
 * is rebuilt (the first never is: the newest instance wins). This budget bounds the second, so a
 * misjudged fencing (say, a clock jump) cannot make two instances take turns for long: rebuilds are
 * allowed while fewer than `limit` fencings happened within `windowMs`; the next one is fatal.
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
