/**
 * Which published changes a delivery announced, for two figures (docs/webhooks.md, "Polling is the safety net"):
 * - nudge-to-published latency: a delivery names a call uid (`announced`), and the first commit after it that
 *   publishes that uid (`published`) observes the time between them;
 * - missed deliveries: a change published that no delivery announced, neither before the publish nor within
 *   `graceMs` after it (deliveries can arrive late), is counted once `graceMs` has passed. Only changes made
 *   since the receiver listened count (`since`, by the call's updatedAt): a backfill or the first poll after a
 *   downtime publishes changes no delivery could have reached us for.
 *
 * Whether a poll was caused by a nudge does not matter: a poll nudged for one call that also finds another
 * call's change whose delivery never comes has found a missed delivery all the same.
 *
 * Bounded: each side keeps at most `maxEntries` uids, the oldest dropped first (a dropped announcement costs
 * one latency sample; a dropped pending change is counted as missed, so a flood errs towards the alert). Entries
 * older than `graceMs` are settled whenever either side is called; a quiet connector settles nothing, which is
 * right: with nothing published, nothing was missed. Time only through the injected clock.
 */
import type { Clock } from '../time/clock.js';
import { OldestFirstMap } from './oldest-first-map.js';

export interface DeliveryLedgerMetrics {
  nudgeToPublished: { observe(seconds: number): void };
  missedDeliveries: { inc(value?: number): void };
}

export interface DeliveryLedgerOptions {
  clock: Pick<Clock, 'now'>;
  /** How long a delivery may come after the publish of its change (and an announcement wait for it). */
  graceMs: number;
  maxEntries: number;
  /** Changes updated before this (ms since epoch) are never counted missed. */
  since: number;
  metrics: DeliveryLedgerMetrics;
}

export class DeliveryLedger {
  /** uid -> when a delivery first announced it, oldest first. */
  private readonly announcements: OldestFirstMap<string, number>;
  /** uid -> when a change no delivery had announced was published, oldest first. */
  private readonly unannounced: OldestFirstMap<string, number>;

  constructor(private readonly options: DeliveryLedgerOptions) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1)
      throw new RangeError(`the delivery ledger needs maxEntries >= 1, got ${options.maxEntries}`);
    this.announcements = new OldestFirstMap(options.maxEntries);
    this.unannounced = new OldestFirstMap(options.maxEntries);
  }

  /** A delivery named `uid` (its nudge was taken). */
  announced(uid: string): void {
    const now = this.options.clock.now();
    this.settle(now);
    // Late for a change already published: announced after all, not missed.
    if (this.unannounced.delete(uid)) return;
    if (!this.announcements.has(uid)) this.announcements.set(uid, now);
  }

  /** A commit published a change of `uid` last updated at `updatedAtMs` (NaN: unknown, counted as recent). */
  published(uid: string, updatedAtMs: number): void {
    const now = this.options.clock.now();
    this.settle(now);
    const announcedAt = this.announcements.get(uid);
    if (announcedAt !== undefined) {
      this.announcements.delete(uid);
      this.options.metrics.nudgeToPublished.observe(Math.max(0, now - announcedAt) / 1_000);
      return;
    }
    if (updatedAtMs < this.options.since || this.unannounced.has(uid)) return;
    // A pending change dropped for room is counted missed: a flood errs towards the alert.
    const dropped = this.unannounced.set(uid, now);
    if (dropped > 0) this.options.metrics.missedDeliveries.inc(dropped);
  }

  /** Changes still waiting for their delivery, and announcements still waiting for their publish. */
  get pending(): { unannounced: number; announcements: number } {
    return { unannounced: this.unannounced.size, announcements: this.announcements.size };
  }

  /** Settles what is older than the grace: pending changes are missed, announcements are forgotten. */
  private settle(now: number): void {
    const cutoff = now - this.options.graceMs;
    const missed = this.unannounced.dropOldestWhile((at) => at <= cutoff);
    if (missed > 0) this.options.metrics.missedDeliveries.inc(missed);
    this.announcements.dropOldestWhile((at) => at <= cutoff);
  }
}
