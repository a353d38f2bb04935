/**
 * How long a page waited for the rate limiter: not worker demand (stretch-rule.ts), so the scheduler takes it
 * off the page's busy time.
 *
 * The scheduler runs each live page inside `measuringLimiterWaits(tally, run)`; a rate limiter (an adapter:
 * api/rate-limit/scope-limiter.ts) calls `limiterWaitBegan()` when a request has to wait for a start and the
 * function it returns when the wait ends (granted, refused or aborted). The tally travels with the page's
 * asynchronous work (AsyncLocalStorage), so neither the orchestrator nor the API client passes it on. A page's
 * requests may wait in parallel (its single calls): the tally counts the wall time during which at least one of
 * them waited, on the injected clock. Outside a measured page (a read-ahead started later, a tool) the
 * limiter's calls do nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '../../time/clock.js';

export class LimiterWaitTally {
  private waiting = 0;
  private since = 0;
  private totalMs = 0;
  private closed = false;

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  /** A request of the page began waiting; returns the call that ends its wait (once). */
  began(): () => void {
    if (this.closed) return () => undefined;
    if (this.waiting === 0) this.since = this.clock.now();
    this.waiting += 1;
    let ended = false;
    return () => {
      if (ended || this.closed) return;
      ended = true;
      this.waiting -= 1;
      if (this.waiting === 0) this.totalMs += this.clock.now() - this.since;
    };
  }

  /** Wall time (ms) during which a request of the page waited, up to now. */
  waitedMs(): number {
    return this.totalMs + (this.waiting > 0 ? this.clock.now() - this.since : 0);
  }

  /** The page ended: returns its total and ignores later waits (a read-ahead it started). */
  close(): number {
    const total = this.waitedMs();
    this.closed = true;
    return total;
  }
}

const current = new AsyncLocalStorage<LimiterWaitTally>();

/** Runs `page` with `tally` counting its requests' waits for the rate limiter. */
export function measuringLimiterWaits<T>(tally: LimiterWaitTally, page: () => Promise<T>): Promise<T> {
  return current.run(tally, page);
}

/**
 * Called by a rate limiter when a request must wait for its start: returns the call that ends the wait (a no-op
 * outside a measured page).
 */
export function limiterWaitBegan(): () => void {
  return current.getStore()?.began() ?? noop;
}

const noop = (): void => undefined;
