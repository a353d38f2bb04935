/** The scheduler's settings (poll.*, api.rateLimit.backfillShare and nudgeShare) and their checks. */
import type { BackoffPolicy } from '../../time/backoff.js';
import type { StoppedRetryPolicy } from './health-rule.js';
import type { RateLimitScopes } from '../ports.js';

export interface SchedulerSettings {
  maxLocationsInFlight: number;
  intervalMs: number;
  pagesPerTurn: number;
  shutdownTimeoutMs: number;
  /** Backoff of a location after a failed traversal (attempt = consecutive failures). */
  failureBackoff: Readonly<BackoffPolicy>;
  /** Backoff of a location stopped by a fatal error that can heal (attempt = consecutive stops). */
  stoppedRetry: StoppedRetryPolicy;
  /**
   * History's guaranteed share of the turns, and of the budget live polls leave it (api.rateLimit.backfillShare,
   * the share the rate limiter owes history's requests); DEFAULT_HISTORY_SHARE when not given.
   */
  historyShare?: number;
  /**
   * Nudged polls' guaranteed share of the turns (api.rateLimit.nudgeShare; turn-rule.ts);
   * DEFAULT_NUDGE_SHARE when not given. With historyShare, at most 1.
   */
  nudgeShare?: number;
  /**
   * Polls are a safety net (webhooks on: deliveries bring the changes, intervalMs is
   * webhooks.reconcileIntervalMs): a location's next poll is at least half an interval after its traversal
   * completed (poll-phase.ts). False or absent: at its next phase instant however soon.
   */
  reconciling?: boolean;
}

/** api.rateLimit.backfillShare's default. */
export const DEFAULT_HISTORY_SHARE = 0.25;
/** api.rateLimit.nudgeShare's default. */
export const DEFAULT_NUDGE_SHARE = 0.25;

/** The scopes when none are wired: one for every location, never held, rate unknown. */
export const ONE_SCOPE: RateLimitScopes = {
  scopeOf: () => 'global',
  heldUntil: () => null,
  ratePerSecond: () => null,
};

/** Throws a RangeError naming what is wrong with `settings` or `locationUids` (each scheduled once). */
export function checkSchedulerSettings(settings: SchedulerSettings, locationUids: readonly string[]): void {
  if (!Number.isInteger(settings.maxLocationsInFlight) || settings.maxLocationsInFlight < 1)
    throw new RangeError('maxLocationsInFlight must be >= 1');
  if (!Number.isInteger(settings.pagesPerTurn) || settings.pagesPerTurn < 1)
    throw new RangeError('pagesPerTurn must be >= 1');
  if (new Set(locationUids).size !== locationUids.length)
    throw new RangeError('each location may be scheduled once');
}
