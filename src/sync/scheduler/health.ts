/**
 * A location's health between its turns: what counts as progress, how long a failing location waits, when it
 * is stopped, when a stopped one has healed, and the gauge of stopped locations.
 *
 * - Progress: a page that completes its lane's traversal or publishes something. Only progress clears the
 *   failure count and resumes a stopped location: a restarted cursor, or a page that publishes nothing between
 *   restarts, would otherwise retry a failing location 1-250 ms later, cycle after cycle, and clear a stopped
 *   location's stops right before the same fatal error, so its backoff would never grow.
 * - A retriable error (API down after retries, sink unavailable, ...) makes the location due again after a
 *   backoff growing with its consecutive failures; it resumes from its committed offset.
 * - A fatal error (cursor loop, 403, malformed pages, revoked grant, ...) stops only that location (gauge
 *   locations_stopped by code). One that can heal (health-rule.ts) is tried again after `stoppedRetry`'s capped,
 *   jittered backoff, growing with its consecutive stops, and counts as stopped until a page makes progress;
 *   one that cannot heal stays stopped until a restart.
 *
 * The rules are pure functions; `LocationHealth` applies them to a slot, logs and counts.
 */
import { codeOf, dispositionOf } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import { backoffDelayMs, type BackoffPolicy } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { healingOf, stoppedRetryDelayMs, type Healing, type StoppedRetryPolicy } from './health-rule.js';
import type { SyncMetrics } from '../ports.js';
import type { LocationState, PageProgress, Slot } from './scheduled-location.js';

/** Whether a page made progress: it completed its lane's traversal or published something. */
export function madeProgress(report: PageProgress): boolean {
  return report.complete || report.published > 0;
}

/** The wait before retrying a location after its `consecutiveFailures`-th retriable failure; at least 1 ms. */
export function failureRetryMs(
  policy: Readonly<BackoffPolicy>,
  consecutiveFailures: number,
  random: number,
): number {
  return Math.max(1, backoffDelayMs(policy, Math.min(consecutiveFailures, 30), random));
}

/** The wait before retrying a location stopped `stops` times in a row; null when only a restart can help. */
export function stoppedRetryMs(
  policy: StoppedRetryPolicy,
  healing: Healing,
  stops: number,
  random: number,
): number | null {
  return healing === 'never' ? null : stoppedRetryDelayMs(policy, healing, stops, random);
}

/** The locations counted as stopped, by the code that stopped them. */
export function stoppedByCode(slots: Iterable<Pick<Slot, 'stoppedBy'>>): Map<string, number> {
  const byCode = new Map<string, number>();
  for (const { stoppedBy } of slots)
    if (stoppedBy !== null) byCode.set(stoppedBy, (byCode.get(stoppedBy) ?? 0) + 1);
  return byCode;
}

/** Where a failed location goes: due again after `delayMs` (infinite: never) in `state`. */
export interface Requeue {
  state: LocationState;
  delayMs: number;
}

export interface LocationHealthOptions {
  failureBackoff: Readonly<BackoffPolicy>;
  stoppedRetry: StoppedRetryPolicy;
  metrics: Pick<SyncMetrics, 'location' | 'locationErrors' | 'locationsStopped'>;
  logger: Logger;
  clock: Clock;
  /** The slots scheduled now, for the gauge. */
  slots: () => Iterable<Slot>;
}

export class LocationHealth {
  constructor(private readonly options: LocationHealthOptions) {
    options.metrics.locationsStopped.reset();
  }

  /** A page went through: progress clears the failures and resumes a stopped location. */
  pageDone(slot: Slot, report: PageProgress): void {
    const progressed = madeProgress(report);
    if (progressed) slot.consecutiveFailures = 0;
    if (slot.stops > 0 && progressed) this.resumed(slot);
  }

  /** A turn failed with `error`: records it and says where the location goes (see the module comment). */
  failed(slot: Slot, error: unknown): Requeue {
    const { metrics, clock, logger } = this.options;
    const code = codeOf(error);
    const message = error instanceof Error ? error.message : String(error);
    slot.lastError = { code, message, at: clock.now() };
    metrics.locationErrors.inc({ location: metrics.location(slot.location.locationUid), code });
    if (dispositionOf(error) !== 'retriable') return this.stop(slot, error, code);
    this.clearStop(slot);
    slot.consecutiveFailures += 1;
    const wait = failureRetryMs(this.options.failureBackoff, slot.consecutiveFailures, clock.random());
    logger.warn(
      {
        location: slot.location.locationUid,
        traversal: slot.location.traversalId,
        code,
        err: error,
        retryInMs: wait,
      },
      'location traversal failed; will retry',
    );
    return { state: 'backoff', delayMs: wait };
  }

  /** Gauge locations_stopped{code}: the slots counted as stopped, by the code that stopped them. */
  publishStopped(): void {
    const gauge = this.options.metrics.locationsStopped;
    gauge.reset();
    for (const [code, count] of stoppedByCode(this.options.slots())) gauge.set({ code }, count);
  }

  /** Stops a location; one that can heal is due again after the stopped-location backoff. */
  private stop(slot: Slot, error: unknown, code: string): Requeue {
    const { stoppedRetry, clock, logger } = this.options;
    const healing = healingOf(error);
    slot.stops += 1;
    slot.stoppedBy = code;
    const retryInMs = stoppedRetryMs(stoppedRetry, healing, slot.stops, clock.random());
    this.publishStopped();
    logger.error(
      {
        location: slot.location.locationUid,
        traversal: slot.location.traversalId,
        code,
        err: error,
        healing,
        stops: slot.stops,
        retryInMs,
      },
      retryInMs === null
        ? 'location stopped by an error only a restart can fix; the other locations continue'
        : 'location stopped by a fatal error; the other locations continue and it is tried again later',
    );
    return { state: 'stopped', delayMs: retryInMs ?? Number.POSITIVE_INFINITY };
  }

  /** A page of a stopped location made progress: it is no longer stopped and its backoff starts over. */
  private resumed(slot: Slot): void {
    this.options.logger.info(
      { location: slot.location.locationUid, stoppedBy: slot.lastError?.code, stops: slot.stops },
      'stopped location resumed',
    );
    slot.stops = 0;
    this.clearStop(slot);
  }

  private clearStop(slot: Slot): void {
    if (slot.stoppedBy === null) return;
    slot.stoppedBy = null;
    this.publishStopped();
  }
}
