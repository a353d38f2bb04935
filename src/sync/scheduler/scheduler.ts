/**
 * Runs many locations at once, fairly, with bounded memory.
 *
 * - At most `maxLocationsInFlight` locations work at a time, each holding at most two pages (the one
 *   committing and the next, read ahead): memory is bounded by pages in flight, not by data size.
 * - Fairness: a location works for at most `pagesPerTurn` pages, then goes to the back of the queue of
 *   ready locations (ordered by the time they became due), so a long backfill does not starve the others.
 * - A location whose traversal completes is due again at its phase of the interval, about `intervalMs`
 *   later (poll-phase.ts), so the polls of many locations spread evenly over the interval. A failed turn is
 *   the health rule's (health.ts): a retriable error makes the location due again after a growing
 *   backoff; a fatal one stops only that location, tried again later if it can heal.
 * - Graceful stop (graceful-stop.ts): when `signal` aborts, no new page starts; pages in flight may finish
 *   for up to `shutdownTimeoutMs`. `run` resolves once every worker has stopped, or at the shutdown timeout
 *   even if a commit has not settled (the caller then closes the sink with a bound). Stopped locations that
 *   can heal never end `run`: the process keeps retrying them and serving metrics. `run` resolves without a
 *   stop only when every location is stopped by an error that only a restart can fix.
 * - Run-time membership (membership.ts; distributed mode, `dynamic`): `add(locations)`, `remove(uids,
 *   boundMs)`. A dynamic scheduler's `run` ends only when `signal` aborts, even with no location at all.
 * - Kinds of work (turn-rule.ts, with turn.ts): scheduled live polls, first traversals since the
 *   scheduler got the location (checks), nudged live polls (nudges.ts, `nudge(uid)`: a webhook delivery said the
 *   location changed) and a split location's history pages (lanes.ts, backfill-queue.ts) each have a guaranteed
 *   share of the turns, an unused share borrowed by the others. The due queue (due-queue.ts) keeps them apart,
 *   per grant.
 * - A history turn ends after `pagesPerTurn` pages, when the lanes merge, when its next page is not read yet,
 *   or as soon as the policy gives the next page's turn to another kind. Looking for history work starts
 *   reading history pages ahead, so history's requests reach the rate limiter whatever live does.
 * - Grants (rate-limit scopes, `scopes`): a location whose grant is held is parked until the hold ends,
 *   `throttled`, without taking a worker (a worker waiting on a hold serves no one); so is one whose page a parked grant refused (a
 *   retriable error while the grant is held), not counted as a failure.
 * - Stretching (stretch.ts, stretch-rule.ts): when the scheduled live polls alone would exceed their
 *   share of the request budget or of the workers, every location's interval is stretched evenly.
 */
import { codeOf, dispositionOf } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { BackoffPolicy } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { BackfillQueue } from './backfill-queue.js';
import { DueQueue } from './due-queue.js';
import { holdEndAt } from './grant-holds.js';
import { gracefulStop } from './graceful-stop.js';
import { IntervalStretch } from './stretch.js';
import { measuringLimiterWaits } from './limiter-wait.js';
import { LocationHealth, madeProgress } from './health.js';
import type { StoppedRetryPolicy } from './health-rule.js';
import { Membership } from './membership.js';
import { Nudges, type NudgeOutcome } from './nudges.js';
import { phasedDelayMs, soonerDueAt } from './poll-phase.js';
import type { RateLimitScopes, SyncMetrics } from '../ports.js';
import {
  statusOf,
  type LocationState,
  type LocationStatus,
  type PageProgress,
  type ScheduledLocation,
  type Slot,
} from './scheduled-location.js';
import { checkSchedulerSettings } from './scheduler-settings-rule.js';
import { TurnCredits } from './turn.js';
import { waitReason, type WaitReason } from './wait-reason.js';

/** The scheduler's settings (poll.*, api.rateLimit.backfillShare and nudgeShare). */
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
const ONE_SCOPE: RateLimitScopes = {
  scopeOf: () => 'global',
  heldUntil: () => null,
  ratePerSecond: () => null,
};

export interface SchedulerOptions {
  locations: readonly ScheduledLocation[];
  /** Locations are added and removed at run time (distributed mode): see the module comment. */
  dynamic?: boolean;
  settings: SchedulerSettings;
  metrics: SyncMetrics;
  logger: Logger;
  clock: Clock;
  /** The locations' rate-limit scopes (grants) and their holds; one scope never held when not given. */
  scopes?: RateLimitScopes;
}

export type { NudgeOutcome } from './nudges.js';
export type { WaitReason } from './wait-reason.js';

/** The code of a request refused by a parked rate-limit scope (the API adapter's ScopeThrottledError). */
const SCOPE_THROTTLED = 'API_SCOPE_THROTTLED';

export class Scheduler {
  /** The locations scheduled now, as they come and go (membership.ts). */
  private readonly members: Membership;
  /** Due times of the slots not running (stopped-for-good slots, due never, are left out); parked workers. */
  private readonly due: DueQueue<Slot>;
  /** Split locations whose history lane waits for a turn, and the history turns running. */
  private readonly backfill: BackfillQueue<Slot>;
  private readonly health: LocationHealth;
  /** run()'s stop signal, for notify(). */
  private stopSignal: AbortSignal | undefined;
  private readonly hardStop = new AbortController();
  private readonly scopes: RateLimitScopes;
  /** The turn policy's shares and credits (turn.ts, turn-rule.ts). */
  private readonly turns: TurnCredits;
  /** The interval locations are polled at now, and the stretch rule's inputs (stretch.ts). */
  private readonly stretch: IntervalStretch;
  /** The slots nudges reach and the follow-ups they asked (nudges.ts). */
  private readonly nudges: Nudges;

  constructor(private readonly options: SchedulerOptions) {
    const { settings, metrics, logger, clock } = options;
    checkSchedulerSettings(
      settings,
      options.locations.map((l) => l.locationUid),
    );
    this.scopes = options.scopes ?? ONE_SCOPE;
    this.turns = new TurnCredits(
      {
        history: settings.historyShare ?? DEFAULT_HISTORY_SHARE,
        nudge: settings.nudgeShare ?? DEFAULT_NUDGE_SHARE,
      },
      settings.maxLocationsInFlight,
    );
    this.stretch = new IntervalStretch({
      configuredMs: settings.intervalMs,
      workers: settings.maxLocationsInFlight,
      scopes: this.scopes,
      metrics,
      logger,
      clock,
      context: () => ({
        locations: this.slots.length,
        liveShare: this.backfill.idle() ? 1 : this.turns.liveShareBesideHistory,
      }),
      onShorter: (intervalMs) => this.pollsSooner(intervalMs),
    });
    this.due = new DueQueue<Slot>({
      clock,
      waiting: (slot) => slot.state !== 'running' && !this.members.isGone(slot),
      onWake: () => this.notify(),
      groupOf: (slot) => slot.scope,
      kindOf: (slot) => (this.nudges.isNudged(slot) ? 'nudge' : slot.checked ? 'live' : 'check'),
      heldUntil: (scope) => this.holdEnd(scope),
      parked: (slot) => (slot.state = 'throttled'),
    });
    this.backfill = new BackfillQueue<Slot>({
      maxPrefetching: settings.maxLocationsInFlight,
      onReady: () => this.notify(),
      heldUntil: (slot) => this.holdEnd(slot.scope),
      // History skipped for a hold resumes at the hold's end, not at the next unrelated wake-up.
      heldSkipped: (until) => this.due.wakeAt(until),
      gone: (slot) => this.members.isGone(slot),
    });
    this.health = new LocationHealth({
      failureBackoff: settings.failureBackoff,
      stoppedRetry: settings.stoppedRetry,
      metrics,
      logger,
      clock,
      slots: () => this.slots,
    });
    this.nudges = new Nudges({
      clock,
      dueNow: (slot, dueAt) => {
        this.due.schedule(slot, dueAt);
        this.notify();
      },
    });
    this.members = new Membership({
      clock,
      hardStop: this.hardStop.signal,
      scopes: this.scopes,
      due: this.due,
      stretch: this.stretch,
      nudges: this.nudges,
      health: this.health,
    });
    this.members.schedule(options.locations);
  }

  private get slots(): readonly Slot[] {
    return this.members.slots;
  }

  /** Schedules locations (due at once). A uid already scheduled (or still leaving) is a RangeError. */
  add(locations: readonly ScheduledLocation[]): void {
    this.members.add(locations);
    this.notify();
  }

  /** Unschedules locations; resolves once none of them has a page in flight (membership.ts). */
  remove(locationUids: Iterable<string>, boundMs: number): Promise<void> {
    return this.members.remove(locationUids, boundMs);
  }

  /** A webhook said `locationUid` changed: its live lane is due now, coalesced (nudges.ts). */
  nudge(locationUid: string): NudgeOutcome {
    return this.nudges.nudge(locationUid);
  }

  /** A small snapshot per location, for the demo's live view, /readyz and heartbeats. */
  status(): LocationStatus[] {
    return this.slots.map(statusOf);
  }

  /** Why each location waits now (wait-reason.ts), for the status view. Read-only. */
  waitReasons(): Array<{ locationUid: string; reason: WaitReason }> {
    const now = this.options.clock.now();
    return this.slots.map((slot) => ({
      locationUid: slot.location.locationUid,
      reason: waitReason({
        nowMs: now,
        state: slot.state,
        lane: slot.lane,
        dueAt: slot.dueAt,
        nudged: this.nudges.isNudged(slot),
        checked: slot.checked,
        consecutiveFailures: slot.consecutiveFailures,
        stoppedBy: slot.stoppedBy,
        holdEndsAt: this.holdEnd(slot.scope),
        configuredMs: this.options.settings.intervalMs,
        effectiveMs: this.stretch.intervalMs,
        workerFactor: this.stretch.workerFactor,
      }),
    }));
  }

  /** Runs until `signal` aborts (then stops gracefully) or every location is stopped for good. Call once. */
  async run(signal: AbortSignal): Promise<void> {
    this.stopSignal = signal;
    const { settings, logger } = this.options;
    const stopping = gracefulStop({
      signal,
      shutdownTimeoutMs: settings.shutdownTimeoutMs,
      hardStop: this.hardStop,
      logger,
      onStop: () => this.notify(),
    });
    const { maxLocationsInFlight } = settings;
    const count = this.options.dynamic
      ? maxLocationsInFlight
      : Math.min(maxLocationsInFlight, Math.max(1, this.slots.length));
    const workers = Array.from({ length: count }, () => this.worker(signal));
    // Once the shutdown timeout has passed, run returns even if a page is still committing: a commit
    // can wait on Kafka for much longer (kafkajs retries, or the sink settling an unknown outcome), and
    // SIGTERM must end in bounded time. Abandoning it is safe: the sink's close bounds the commit, and
    // what is stored decides where the next start resumes.
    try {
      const outcome = await Promise.race([Promise.all(workers), stopping.abandoned]);
      if (outcome === 'abandoned') {
        const stuck = this.slots.filter((s) => s.state === 'running').map((s) => s.location.locationUid);
        if (stuck.length > 0)
          logger.warn({ locations: stuck }, 'shutdown timeout passed: abandoning pages still in flight');
      }
    } finally {
      stopping.dispose();
      this.due.cancelTimer();
      this.stretch.dispose();
    }
  }

  private async worker(stop: AbortSignal): Promise<void> {
    for (;;) {
      if (stop.aborted) return;
      if (this.finished()) {
        this.notify();
        return;
      }
      const slot = this.takeDue() ?? (await this.due.park());
      if (slot === undefined) continue;
      if (stop.aborted) {
        // Handed over just before the stop: no new page starts.
        if (slot.lane === 'history') this.backfill.turnEnded();
        this.requeue(slot, 'waiting', 0);
        return;
      }
      await (slot.lane === 'history' ? this.historyTurn(slot, stop) : this.liveTurn(slot, stop));
      this.notify();
    }
  }

  /** A static scheduler is done when no location is due ever again, none is running and none backfills. */
  private finished(): boolean {
    return (
      this.options.dynamic !== true &&
      this.due.next() === undefined &&
      !this.slots.some((s) => s.state === 'running') &&
      this.backfill.drained()
    );
  }

  /**
   * A slot for the kind of turn the policy gives now (turn-rule.ts), marked running: a location due now
   * (the due queue's, of that kind, grants in turn) for a live or nudged turn, the backfill queue's next ready
   * one for a history turn; or none yet. It first moves the backfill queue on (pump), which starts reading
   * history pages ahead, so history's requests reach the rate limiter whatever live does.
   */
  private takeDue(): Slot | undefined {
    this.backfill.pump();
    const kind = this.turns.turnFor({
      nudge: this.due.anyDue('nudge'),
      live: this.due.anyDue('live'),
      check: this.due.anyDue('check'),
      history: this.backfill.ready() !== undefined,
      historyTurns: this.backfill.historyTurns,
    });
    if (kind === null) return undefined;
    const slot = kind === 'history' ? this.backfill.take() : this.due.takeDue(kind);
    if (slot === undefined) return undefined;
    slot.state = 'running';
    slot.lane = kind === 'history' ? 'history' : 'live';
    return slot;
  }

  /** When `scope`'s hold ends if it is held now, else null: the one place that asks (grant-holds.ts). */
  private holdEnd(scope: string): number | null {
    return holdEndAt(this.scopes, scope, this.options.clock.now());
  }

  /**
   * The interval became shorter on the clock (stretch.ts): a location waiting for its scheduled poll
   * at the longer one is due at its phase of the shorter one after its last completed traversal (at once when
   * that has passed), so polls recover without waiting out the stretch they were scheduled with.
   */
  private pollsSooner(intervalMs: number): void {
    const { clock, settings } = this.options;
    const now = clock.now();
    let moved = false;
    for (const slot of this.slots) {
      if (slot.state !== 'waiting' || this.nudges.isNudged(slot)) continue;
      const due = soonerDueAt(slot, intervalMs, now, settings.reconciling === true);
      if (due === null) continue;
      this.due.schedule(slot, due);
      moved = true;
    }
    if (moved) this.notify();
  }

  /**
   * Hands the locations now due to parked workers, one each, and re-arms the timer for the next due time;
   * on stop, or when a static scheduler has nothing left, releases every parked worker. Called whenever
   * work may have changed: a turn ended, locations were added, the timer fired, a history page was read
   * ahead, the stop began.
   */
  private notify(): void {
    if (this.stopSignal?.aborted === true || this.finished()) this.due.releaseAll();
    else this.due.handOut(() => this.takeDue());
  }

  /** A live turn: pages of the location's live lane until `pagesPerTurn` or its traversal completes. */
  private async liveTurn(slot: Slot, stop: AbortSignal): Promise<void> {
    const { settings, clock } = this.options;
    try {
      for (let page = 0; page < settings.pagesPerTurn; page++) {
        const report = await this.livePage(slot);
        this.health.pageDone(slot, report);
        if (report.complete) {
          slot.lastSuccessAt = clock.now();
          slot.checked = true;
          // Due again at the location's phase of the (effective) interval, so polls spread evenly
          // (poll-phase.ts; reconciliation polls at least half an interval apart); at once when a nudge asked a
          // follow-up poll meanwhile.
          const interval = this.stretch.intervalMs;
          const phased = phasedDelayMs(
            clock.now(),
            interval,
            slot.phase,
            settings.reconciling === true ? interval / 2 : 0,
          );
          this.requeue(slot, 'waiting', this.nudges.afterLiveTraversal(slot, phased));
          // Its history lane, if split, reads in the time until then, when no live work is due.
          this.backfill.enqueue(slot);
          return;
        }
        if (stop.aborted || this.members.isLeaving(slot)) break;
      }
      this.requeue(slot, 'waiting', 0);
    } catch (error) {
      this.failed(slot, error);
    } finally {
      this.members.turnEnded(slot);
    }
  }

  /**
   * One live page. A scheduled poll's page is timed for the stretch rule (stretch.ts): its busy time,
   * less its waits for the rate limiter, counts as worker demand when it made progress, and the interval is
   * worked out again as it ends. A nudged poll's is not: nudges come in bursts, have their own share of the
   * turns, and stretching the interval would not make them fewer.
   */
  private async livePage(slot: Slot): Promise<PageProgress> {
    if (this.nudges.isNudged(slot)) return slot.location.runPage(slot.pageSignal);
    const timer = this.stretch.pageStarted();
    let progressed = false;
    try {
      const report = await measuringLimiterWaits(timer.limiterWaits, () =>
        slot.location.runPage(slot.pageSignal),
      );
      progressed = madeProgress(report);
      return report;
    } finally {
      this.stretch.pageEnded(timer, progressed);
    }
  }

  /**
   * A history turn: pages of the location's history lane until `pagesPerTurn`, the lanes merge, its next page
   * is not read yet, or the turn policy gives the worker to live work. Its live lane stays due when it was.
   */
  private async historyTurn(slot: Slot, stop: AbortSignal): Promise<void> {
    const { settings, clock } = this.options;
    const { location } = slot;
    const liveDueAt = slot.dueAt;
    try {
      for (let page = 0; page < settings.pagesPerTurn; page++) {
        const report = await location.runPage(slot.pageSignal, 'history');
        this.health.pageDone(slot, report);
        if (location.hasHistory !== true || stop.aborted || this.members.isLeaving(slot)) break;
        const nudged = this.nudges.isNudged(slot);
        const goesOn = this.turns.turnFor(
          {
            nudge: (nudged && liveDueAt <= clock.now()) || this.due.anyDue('nudge'),
            live: (!nudged && liveDueAt <= clock.now()) || this.due.anyDue('live'),
            check: this.due.anyDue('check'),
            history: true,
            historyTurns: this.backfill.historyTurns - 1,
          },
          'history',
        );
        if (goesOn !== 'history') break;
        // Its next page is not read yet: still being read (its commit started it), or not started (a rejected
        // cursor restarted the lane, an idle page): the slot comes back when the backfill queue has it read.
        // Reading it in the turn would hold the location, and its own live poll, for a listing and its
        // single calls at backfill priority: a same-instant group read through page by page, under a rate
        // limit cut by 429s, can hold a live lane for tens of seconds.
        if (location.historyAhead().state !== 'ready') break;
      }
      this.requeue(slot, 'waiting', this.nudges.afterHistoryTurn(slot, Math.max(0, liveDueAt - clock.now())));
      this.backfill.enqueue(slot);
    } catch (error) {
      this.failed(slot, error);
    } finally {
      this.backfill.turnEnded();
      this.members.turnEnded(slot);
    }
  }

  /**
   * A turn failed: the health rule says when the location is due again (a location leaving: at once). A
   * retriable failure while its grant is held (its requests refused by a parked scope) is no failure of the
   * location: it is parked until the hold ends, throttled. Nor is a request the parked scope refused
   * (API_SCOPE_THROTTLED, such as a history page read ahead during a hold) taken after the hold ended: the
   * location is due again at once.
   */
  private failed(slot: Slot, error: unknown): void {
    if (this.hardStop.signal.aborted || this.members.isLeaving(slot)) {
      this.requeue(slot, 'waiting', 0);
      return;
    }
    const heldUntil = this.holdEnd(slot.scope);
    if (dispositionOf(error) === 'retriable' && heldUntil !== null) {
      this.requeue(slot, 'throttled', heldUntil - this.options.clock.now());
      return;
    }
    if (codeOf(error) === SCOPE_THROTTLED) {
      this.requeue(slot, 'waiting', 0);
      return;
    }
    const { state, delayMs } = this.health.failed(slot, error);
    this.requeue(slot, state, delayMs);
  }

  /** Due again in `delayMs`; a failed turn voids a nudge (the health rule's time rules). */
  private requeue(slot: Slot, state: LocationState, delayMs: number): void {
    slot.state = state;
    if (state !== 'waiting') this.nudges.turnFailed(slot);
    this.due.schedule(slot, this.options.clock.now() + delayMs);
  }
}
