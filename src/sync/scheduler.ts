/**
 * Runs many locations at once, fairly, with bounded memory.
 *
 * - At most `maxLocationsInFlight` locations work at a time, each holding at most two pages (the one
 *   committing and the next, read ahead): memory is bounded by pages in flight, not by data size.
 * - Fairness: a location works for at most `pagesPerTurn` pages, then goes to the back of the queue of
 *   ready locations (ordered by the time they became due), so a long backfill does not starve the others.
 * - A location whose traversal completes is due again at its phase of the interval, about `intervalMs`
 *   later (poll-phase.ts), so the polls of many locations spread evenly over the interval. A failed turn is
 *   the health rule's (location-health.ts): a retriable error makes the location due again after a growing
 *   backoff; a fatal one stops only that location, tried again later if it can heal.
 * - Graceful stop: when `signal` aborts, no new page starts; pages in flight may finish and commit for up
 *   to `shutdownTimeoutMs` (a wall timer: real time, whatever the injected clock does), after which they
 *   are aborted (abandoned before their commit). `run` resolves once every worker has stopped, or at the
 *   shutdown timeout even if a commit has not settled (the caller then closes the sink with a bound). Stopped
 *   locations that can heal never end `run`: the process keeps retrying them and serving metrics. `run`
 *   resolves without a stop only when every location is stopped by an error that only a restart can fix.
 * - Run-time membership (distributed mode, `dynamic`): `add(locations)` schedules locations now owned, due at
 *   once; `remove(uids, boundMs)` stops taking pages of locations no longer owned: a location between pages
 *   leaves at once, one in the middle of a page may finish it for up to `boundMs` (on the injected clock),
 *   after which the page is aborted (abandoned before its commit). It resolves once none of them has a page
 *   in flight. A dynamic scheduler's `run` ends only when `signal` aborts, even with no location at all.
 * - Lanes (lanes.ts): a split location is due at its phase for its live lane like any other; once its live
 *   traversal completes it also joins the backfill queue (backfill-queue.ts), whose history pages are read in
 *   the background before their turn. The turn policy (turn-policy.ts) says which kind of turn a worker takes:
 *   each kind has a guaranteed share of the turns (history: `historyShare`, api.rateLimit.backfillShare), an
 *   unused share is borrowed, so live polls filling every worker do not starve history (review L1). Looking
 *   for history work (the policy's "history waits") starts reading history pages ahead, so history's requests
 *   reach the rate limiter whatever live does. A history turn ends after `pagesPerTurn` pages, when the lanes
 *   merge, when its next page is not ready yet, or as soon as the policy gives the next page's turn to live.
 * - Grants (rate-limit scopes, `scopes`): the due queue takes locations from the grants with one due in turn,
 *   so a grant with many locations does not take every worker; a location whose grant is held (a Retry-After,
 *   a spent quota) is parked until the hold ends, `throttled`, without taking a worker (review L2), and the
 *   other grants go on at full pace. A page whose requests a parked grant refuses (a retriable error while
 *   the grant is held) parks its location the same way, not counted as a failure.
 * - Stretching (poll-stretch.ts): when the live polls alone would exceed their share of the request budget or
 *   of the workers, every location's interval is stretched evenly (gauge poll_effective_interval_seconds, one
 *   warning when it stretches and one when it recovers), and history still advances at its share.
 * - Cost per poll grows with neither the locations nor the workers (due-queue.ts: a heap per grant, one timer;
 *   the stretch rule reads counts per grant kept as locations come and go).
 * - Nudges (`nudge(uid)`, a webhook delivery said the location changed): its live lane is due now, coalesced.
 *   A nudged poll is an ordinary live turn: the turn policy's share rule counts it as live work.
 */
import { dispositionOf } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { BackoffPolicy } from '../time/backoff.js';
import { startTimer, wallTimer, type Clock, type Timer } from '../time/clock.js';
import { BackfillQueue } from './backfill-queue.js';
import { DueQueue } from './due-queue.js';
import type { StoppedRetryPolicy } from './healing.js';
import { LocationHealth } from './location-health.js';
import { phasedDelayMs } from './poll-phase.js';
import {
  slotFor,
  statusOf,
  type LocationState,
  type LocationStatus,
  type ScheduledLocation,
  type Slot,
} from './scheduled-location.js';
import { averageTurnMs, effectiveIntervalMs, isStretched } from './poll-stretch.js';
import type { RateLimitScopes, SyncMetrics } from './ports.js';
import {
  nextTurn,
  turnShares,
  NO_DEFICITS,
  type TurnDeficits,
  type TurnKind,
  type TurnShares,
} from './turn-policy.js';

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
}

/** api.rateLimit.backfillShare's default. */
export const DEFAULT_HISTORY_SHARE = 0.25;

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

/**
 * What a nudge did: made the live lane due now (`due_now`); found it due already or a follow-up already asked
 * (`coalesced`); asked one follow-up live poll after the turn running now (`follow_up`); left a location in
 * backoff or stopped to its health rule (`held`); or named a location not scheduled here (`unknown`).
 */
export type NudgeOutcome = 'due_now' | 'coalesced' | 'follow_up' | 'held' | 'unknown';

export class Scheduler {
  private readonly slots: Slot[];
  /** Due times of the slots not running (stopped-for-good slots, due never, are left out); parked workers. */
  private readonly due: DueQueue<Slot>;
  /** Split locations whose history lane waits for a turn, and the history turns running. */
  private readonly backfill: BackfillQueue<Slot>;
  private readonly health: LocationHealth;
  /** run()'s stop signal, for notify(). */
  private stopSignal: AbortSignal | undefined;
  private readonly hardStop = new AbortController();
  private readonly scopes: RateLimitScopes;
  private readonly shares: TurnShares;
  /** The turn policy's credits (turn-policy.ts). */
  private deficits: TurnDeficits = NO_DEFICITS;
  /** Moving average of live turn durations (ms), for the stretch rule. */
  private liveTurnMs: number | null = null;
  /** The interval locations are polled at now (poll-stretch.ts), and whether that was reported as stretched. */
  private intervalMs: number;
  private stretched = false;
  /** Locations scheduled per rate-limit scope, kept as they come and go (the stretch rule reads it per poll). */
  private readonly perScope = new Map<string, number>();
  /** Running locations nudged meanwhile: their next live poll is due at once when the turn ends. */
  private readonly followUps = new WeakSet<Slot>();
  /** The scheduled slots by location uid, for nudges. */
  private readonly byUid = new Map<string, Slot>();

  constructor(private readonly options: SchedulerOptions) {
    const { settings, metrics, logger, clock } = options;
    if (!Number.isInteger(settings.maxLocationsInFlight) || settings.maxLocationsInFlight < 1)
      throw new RangeError('maxLocationsInFlight must be >= 1');
    if (!Number.isInteger(settings.pagesPerTurn) || settings.pagesPerTurn < 1)
      throw new RangeError('pagesPerTurn must be >= 1');
    const uids = new Set(options.locations.map((l) => l.locationUid));
    if (uids.size !== options.locations.length) throw new RangeError('each location may be scheduled once');
    this.scopes = options.scopes ?? ONE_SCOPE;
    this.shares = turnShares(settings.historyShare ?? DEFAULT_HISTORY_SHARE);
    this.intervalMs = settings.intervalMs;
    metrics.pollEffectiveInterval.set(settings.intervalMs / 1000);
    this.due = new DueQueue<Slot>({
      clock,
      waiting: (slot) => slot.state !== 'running' && !slot.detached,
      onWake: () => this.notify(),
      groupOf: (slot) => slot.scope,
      heldUntil: (scope) => this.scopes.heldUntil(scope),
      parked: (slot) => (slot.state = 'throttled'),
    });
    this.backfill = new BackfillQueue<Slot>({
      maxPrefetching: settings.maxLocationsInFlight,
      onReady: () => this.notify(),
      held: (slot) => this.isHeld(slot),
    });
    this.health = new LocationHealth({
      failureBackoff: settings.failureBackoff,
      stoppedRetry: settings.stoppedRetry,
      metrics,
      logger,
      clock,
      slots: () => this.slots,
    });
    this.slots = options.locations.map((location) => this.newSlot(location));
  }

  private newSlot(location: ScheduledLocation): Slot {
    const slot = slotFor(location, this.hardStop.signal, this.scopes.scopeOf(location.locationUid));
    this.perScope.set(slot.scope, (this.perScope.get(slot.scope) ?? 0) + 1);
    this.byUid.set(location.locationUid, slot);
    this.due.schedule(slot, this.options.clock.now());
    return slot;
  }

  /** Schedules locations (due at once). A uid already scheduled (or still leaving) is a RangeError. */
  add(locations: readonly ScheduledLocation[]): void {
    const present = new Set(this.slots.map((s) => s.location.locationUid));
    for (const location of locations) {
      if (present.has(location.locationUid))
        throw new RangeError(`location ${location.locationUid} is already scheduled`);
      present.add(location.locationUid);
    }
    for (const location of locations) this.slots.push(this.newSlot(location));
    this.notify();
  }

  /**
   * Unschedules locations (unknown uids are ignored): no page of theirs starts any more. Resolves once
   * none of them has a page in flight; a page still in flight after `boundMs` is aborted. Their status
   * and their share of locations_stopped go with them.
   */
  async remove(locationUids: Iterable<string>, boundMs: number): Promise<void> {
    const uids = new Set(locationUids);
    const leaving: Array<Promise<void>> = [];
    const inFlight: Slot[] = [];
    for (const slot of [...this.slots]) {
      if (!uids.has(slot.location.locationUid) || slot.removed !== null) continue;
      if (slot.state !== 'running') {
        this.detach(slot);
        continue;
      }
      inFlight.push(slot);
      leaving.push(new Promise<void>((resolve) => (slot.removed = resolve)));
    }
    this.health.publishStopped();
    if (leaving.length === 0) return;
    const bound = startTimer(this.options.clock, boundMs, () => {
      for (const slot of inFlight)
        slot.abort.abort(new Error('the location was removed: abandoning its page in flight'));
    });
    try {
      await Promise.all(leaving);
    } finally {
      bound.cancel();
    }
  }

  private detach(slot: Slot): void {
    slot.detached = true;
    // A read-ahead its last page started (listing and GETs, on the page signal) must not outlive the
    // location's removal: it would spend API quota at every rebalance for nothing (issue 20).
    if (!slot.abort.signal.aborted) slot.abort.abort(new Error('the location was removed'));
    const index = this.slots.indexOf(slot);
    if (index >= 0) {
      this.slots.splice(index, 1);
      this.perScope.set(slot.scope, (this.perScope.get(slot.scope) ?? 1) - 1);
    }
    if (this.byUid.get(slot.location.locationUid) === slot) this.byUid.delete(slot.location.locationUid);
  }

  /**
   * A webhook said `locationUid` changed: its live lane is due now (before the locations due later, after
   * those due already), coalesced per location. A location polling now gets exactly one follow-up live poll
   * once its live traversal completes (or its history turn ends), however many nudges came meanwhile; one in
   * backoff or stopped keeps its health rule's due time (a nudge must not hammer a failing API).
   */
  nudge(locationUid: string): NudgeOutcome {
    const slot = this.byUid.get(locationUid);
    if (slot === undefined || slot.removed !== null) return 'unknown';
    if (slot.state === 'running') {
      if (this.followUps.has(slot)) return 'coalesced';
      this.followUps.add(slot);
      return 'follow_up';
    }
    if (slot.state !== 'waiting') return 'held';
    const now = this.options.clock.now();
    if (slot.dueAt <= now) return 'coalesced';
    this.due.schedule(slot, now);
    this.notify();
    return 'due_now';
  }

  /** A small snapshot per location, for the demo's live view, /readyz and heartbeats. */
  status(): LocationStatus[] {
    return this.slots.map(statusOf);
  }

  /** Runs until `signal` aborts (then stops gracefully) or every location is stopped for good. Call once. */
  async run(signal: AbortSignal): Promise<void> {
    this.stopSignal = signal;
    const { settings, logger } = this.options;
    let deadline: Timer | undefined;
    const onStop = () => {
      logger.info({ shutdownTimeoutMs: settings.shutdownTimeoutMs }, 'stopping: finishing pages in flight');
      deadline = wallTimer(settings.shutdownTimeoutMs, () =>
        this.hardStop.abort(new Error('shutdown timeout: abandoning pages in flight')),
      );
      this.notify();
    };
    if (signal.aborted) onStop();
    else signal.addEventListener('abort', onStop, { once: true });
    const { maxLocationsInFlight } = settings;
    const count = this.options.dynamic
      ? maxLocationsInFlight
      : Math.min(maxLocationsInFlight, Math.max(1, this.slots.length));
    const workers = Array.from({ length: count }, () => this.worker(signal));
    // Once the shutdown timeout has passed, run returns even if a page is still committing: a commit
    // can wait on Kafka for much longer (kafkajs retries, or the sink settling an unknown outcome), and
    // SIGTERM must end in bounded time. Abandoning it is safe: the sink's close bounds the commit, and
    // what is stored decides where the next start resumes.
    const abandoned = new Promise<'abandoned'>((resolve) => {
      if (this.hardStop.signal.aborted) resolve('abandoned');
      else this.hardStop.signal.addEventListener('abort', () => resolve('abandoned'), { once: true });
    });
    try {
      const outcome = await Promise.race([Promise.all(workers), abandoned]);
      if (outcome === 'abandoned') {
        const stuck = this.slots.filter((s) => s.state === 'running').map((s) => s.location.locationUid);
        if (stuck.length > 0)
          logger.warn({ locations: stuck }, 'shutdown timeout passed: abandoning pages still in flight');
      }
    } finally {
      signal.removeEventListener('abort', onStop);
      deadline?.cancel();
      this.due.cancelTimer();
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
   * A slot for the kind of turn the policy gives now (turn-policy.ts), marked running: a location due now
   * (the due queue's, grants in turn) for a live turn, the backfill queue's next ready one for a history turn;
   * or none yet. Asking whether history waits starts reading history pages ahead (backfill-queue.ts).
   */
  private takeDue(): Slot | undefined {
    const kind = this.turnFor({
      live: this.due.anyDue(),
      history: this.backfill.next() !== undefined,
      historyTurns: this.backfill.historyTurns,
    });
    if (kind === null) return undefined;
    const slot = kind === 'live' ? this.due.takeDue() : this.backfill.take();
    if (slot === undefined) return undefined;
    slot.state = 'running';
    slot.lane = kind;
    return slot;
  }

  /**
   * Asks the turn policy and keeps its credits, unless the answer is not `keepOnly` (a history turn asking
   * whether it goes on: when it does not, the worker asks again for the turn it takes, which is charged then).
   */
  private turnFor(
    work: { live: boolean; history: boolean; historyTurns: number },
    keepOnly?: TurnKind,
  ): TurnKind | null {
    const choice = nextTurn(this.deficits, this.shares, {
      waiting: { live: work.live, history: work.history },
      historyTurns: work.historyTurns,
      maxLocationsInFlight: this.options.settings.maxLocationsInFlight,
    });
    if (keepOnly === undefined || choice.kind === keepOnly) this.deficits = choice.deficits;
    return choice.kind;
  }

  private isHeld(slot: Slot): boolean {
    const until = this.scopes.heldUntil(slot.scope);
    return until !== null && until > this.options.clock.now();
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
    const startedAt = clock.now();
    try {
      for (let page = 0; page < settings.pagesPerTurn; page++) {
        const report = await slot.location.runPage(slot.pageSignal);
        this.health.pageDone(slot, report);
        if (report.complete) {
          slot.lastSuccessAt = clock.now();
          this.liveTurnEnded(clock.now() - startedAt);
          // Due again at the location's phase of the (effective) interval, so polls spread evenly
          // (poll-phase.ts); at once when a nudge asked a follow-up poll meanwhile.
          const phased = phasedDelayMs(clock.now(), this.intervalMs, slot.phase);
          this.requeue(slot, 'waiting', this.followUps.delete(slot) ? 0 : phased);
          // Its history lane, if split, reads in the time until then, when no live work is due.
          this.backfill.enqueue(slot);
          return;
        }
        if (stop.aborted || slot.removed !== null) break;
      }
      this.requeue(slot, 'waiting', 0);
    } catch (error) {
      this.failed(slot, error);
    } finally {
      this.turnEnded(slot);
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
        if (location.hasHistory !== true || stop.aborted || slot.removed !== null) break;
        const goesOn = this.turnFor(
          {
            live: liveDueAt <= clock.now() || this.due.anyDue(),
            history: true,
            historyTurns: this.backfill.historyTurns - 1,
          },
          'history',
        );
        if (goesOn !== 'history') break;
        // Its next page is still being read (its commit started it): the slot comes back when it is ready.
        if (location.historyAhead().state === 'pending') break;
      }
      this.requeue(slot, 'waiting', this.followUps.delete(slot) ? 0 : Math.max(0, liveDueAt - clock.now()));
      this.backfill.enqueue(slot);
    } catch (error) {
      this.failed(slot, error);
    } finally {
      this.backfill.turnEnded();
      this.turnEnded(slot);
    }
  }

  /**
   * A turn failed: the health rule says when the location is due again (a location leaving: at once). A
   * retriable failure while its grant is held (its requests refused by a parked scope) is no failure of the
   * location: it is parked until the hold ends, throttled.
   */
  private failed(slot: Slot, error: unknown): void {
    if (this.hardStop.signal.aborted || slot.removed !== null) {
      this.requeue(slot, 'waiting', 0);
      return;
    }
    const heldUntil = this.scopes.heldUntil(slot.scope);
    if (dispositionOf(error) === 'retriable' && heldUntil !== null && heldUntil > this.options.clock.now()) {
      this.requeue(slot, 'throttled', heldUntil - this.options.clock.now());
      return;
    }
    const { state, delayMs } = this.health.failed(slot, error);
    this.requeue(slot, state, delayMs);
  }

  /** A turn is over: a location removed meanwhile leaves now. */
  private turnEnded(slot: Slot): void {
    const removed = slot.removed;
    if (removed !== null) {
      this.detach(slot);
      this.health.publishStopped();
      removed();
    }
  }

  /**
   * A live traversal completed in one turn of `turnMs`: the stretch rule (poll-stretch.ts) says the interval
   * locations are polled at now; the gauge follows it and a change of its verdict is said once.
   */
  private liveTurnEnded(turnMs: number): void {
    const { settings, metrics, logger } = this.options;
    this.liveTurnMs = averageTurnMs(this.liveTurnMs, turnMs);
    const locations = this.slots.length;
    const historyWaits = !this.backfill.idle();
    const liveShare = historyWaits ? this.shares.live : 1;
    const effective = effectiveIntervalMs({
      configuredMs: settings.intervalMs,
      locations,
      scopes: [...this.perScope].map(([scope, count]) => ({
        locations: count,
        ratePerSecond: this.scopes.ratePerSecond(scope),
      })),
      liveTurnMs: this.liveTurnMs,
      workers: settings.maxLocationsInFlight,
      liveShare,
    });
    this.intervalMs = effective;
    metrics.pollEffectiveInterval.set(effective / 1000);
    const stretched = isStretched(effective, settings.intervalMs, this.stretched);
    if (stretched === this.stretched) return;
    this.stretched = stretched;
    const figures = {
      intervalMs: settings.intervalMs,
      effectiveIntervalMs: Math.round(effective),
      locations,
      liveTurnMs: Math.round(this.liveTurnMs),
      liveShare,
    };
    if (stretched)
      logger.warn(
        figures,
        'live polls alone exceed their share of the API budget or of the workers: every location is polled at effectiveIntervalMs instead of poll.intervalMs, history keeps its share (docs/runbook.md)',
      );
    else logger.info(figures, 'polls are back at poll.intervalMs');
  }

  /** Due again in `delayMs`; a failed turn voids a follow-up a nudge asked (the health rule's time rules). */
  private requeue(slot: Slot, state: LocationState, delayMs: number): void {
    slot.state = state;
    if (state !== 'waiting') this.followUps.delete(slot);
    this.due.schedule(slot, this.options.clock.now() + delayMs);
  }
}
