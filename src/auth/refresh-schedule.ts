/**
 * When a grant's access token is refreshed: proactively, once it is within the refresh margin of its expiry
 * (`RefreshMargin`), and after a failed refresh not before a backoff lets it (`RetryGate`).
 */
import type { GrantRecord } from './store/token-store.js';
import { backoffDelayMs, type Backoff } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';

/** Backoff between refresh attempts after a failure (TokenManagerOptions.refreshRetry). */
export const DEFAULT_REFRESH_RETRY = Object.freeze({ initialDelayMs: 5_000, maxDelayMs: 300_000 });

/**
 * The refresh margin of one instance: `refreshBeforeExpiryMs` plus a random share of `refreshJitterMs`, chosen
 * once, so instances sharing a grant do not all refresh at the same second.
 */
export class RefreshMargin {
  private readonly marginMs: number;

  /** Throws a RangeError when the margin is negative, or, its jitter included, not shorter than the token lifetime. */
  constructor(
    refreshBeforeExpiryMs: number,
    jitterWindowMs: number,
    lifetimeMs: number,
    clock: Pick<Clock, 'random'>,
  ) {
    if (!(refreshBeforeExpiryMs >= 0)) throw new RangeError('refreshBeforeExpiryMs must be >= 0');
    if (refreshBeforeExpiryMs >= lifetimeMs) {
      throw new RangeError('refreshBeforeExpiryMs must be shorter than the access token lifetime');
    }
    if (!(jitterWindowMs >= 0) || refreshBeforeExpiryMs + jitterWindowMs >= lifetimeMs) {
      throw new RangeError(
        'refreshBeforeExpiryMs + refreshJitterMs must be shorter than the access token lifetime',
      );
    }
    this.marginMs = refreshBeforeExpiryMs + Math.floor(clock.random() * jitterWindowMs);
  }

  /**
   * Within refreshBeforeExpiryMs (plus this instance's jitter) of the expiry. A token the service issued for
   * less than that margin (its `expires_in` shorter than the configuration expects) would be due the moment
   * it arrives and refreshed on every call, by every instance sharing the grant: it is refreshed halfway
   * through its life instead.
   */
  due(record: GrantRecord, now: number): boolean {
    const lifetime = record.accessTokenExpiresAt - record.obtainedAt;
    return now >= record.accessTokenExpiresAt - (this.marginMs < lifetime ? this.marginMs : lifetime / 2);
  }
}

/**
 * A gate between attempts after failures (not a loop: callers ask it whether to try now). The waits are the
 * one backoff formula (time/backoff.ts): initialDelayMs doubling to maxDelayMs, 50-100 % of it at random.
 */
export class RetryGate {
  private failures = 0;
  /** Epoch ms before which no attempt is made; 0 when not backing off. */
  retryAt = 0;
  private readonly backoff: Backoff;

  constructor(
    policy: { initialDelayMs: number; maxDelayMs: number },
    private readonly clock: Pick<Clock, 'random'>,
  ) {
    this.backoff = { ...policy, multiplier: 2, jitter: 0.5 };
  }

  waiting(now: number): boolean {
    return now < this.retryAt;
  }

  /** Records a failure at `now`; returns the wait before the next attempt. */
  fail(now: number): number {
    // A streak that ended long ago starts over.
    if (now > this.retryAt + this.backoff.maxDelayMs) this.failures = 0;
    this.failures += 1;
    const wait = backoffDelayMs(this.backoff, this.failures, this.clock.random());
    this.retryAt = now + wait;
    return wait;
  }

  reset(): void {
    this.failures = 0;
    this.retryAt = 0;
  }
}
