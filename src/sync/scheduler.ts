/**
 * Runs many locations at once, fairly, with bounded memory.
 *
 * - At most `maxLocationsInFlight` locations work at a time, each holding at most two pages (the one
 *   committing and the next, read ahead): memory is bounded by pages in flight, not by data size.
 * - Fairness: a location works for at most `pagesPerTurn` pages, then goes to the back of the queue of
 *   ready locations (ordered by the time they became due), so a long backfill does not starve the others.
 * - A location whose traversal completes is due again at its phase of the interval, about `intervalMs`
 *   later (poll-phase.ts), so the polls of many locations spread evenly over the interval.
 * - A retriable error (API down after retries, sink unavailable, ...) makes the location due again after a
 *   backoff growing with its consecutive failures; it resumes from its committed offset.
 * - A fatal error (cursor loop, 403, malformed pages, revoked grant, ...) stops only that location
 *   (gauge locations_stopped by code); the others go on. A stopped location that can heal (healing.ts)
 *   is tried again after `stoppedRetry`'s capped, jittered backoff, growing with its consecutive stops,
 *   and counts as stopped until a page succeeds; one that cannot heal stays stopped until a restart.
 * - Graceful stop: when `signal` aborts, no new page starts; pages in flight may finish and commit for up
 *   to `shutdownTimeoutMs`, after which they are aborted (abandoned before their commit). `run` resolves
 *   once every worker has stopped, or at the shutdown timeout even if a commit has not settled (the
 *   caller then closes the sink with a bound). Stopped locations that can heal never end `run`: the
 *   process keeps retrying them and serving metrics. `run` resolves without a stop only when every
 *   location is stopped by an error that only a restart can fix.
 *
 * - Run-time membership (distributed mode, `dynamic`): `add(syncs)` schedules locations now owned, due at
 *   once; `remove(uids, boundMs)` stops taking pages of locations no longer owned: a location between pages
 *   leaves at once, one in the middle of a page may finish it for up to `boundMs` (on the injected clock),
 *   after which the page is aborted (abandoned before its commit). It resolves once none of them has a page
 *   in flight. A dynamic scheduler's `run` ends only when `signal` aborts, even with no location at all.
 *
 * - Lanes (lanes.ts): a location split into a live and a history lane is due at its phase for its live lane
 *   like any other; once its live traversal completes it also joins the backfill queue (FIFO). A worker takes
 *   due live work first, and a history turn (`runPage(signal, 'history')`) only when no live work is due:
 *   history fills half the slots (at least one: the others stay free for live work) and the API budget the
 *   live lanes leave. A location's history page is read in the background before its turn (nextBackfill,
 *   LocationSync.prefetchHistory) and a history turn is given only when it is ready, so the turn is a commit
 *   and a location's own live poll never waits for a history page's single calls. A history turn ends after
 *   `pagesPerTurn` pages, when the lanes merge, when its next page is not ready yet, or as soon as any live
 *   work falls due (its own location's or another's).
 *
 * `status()` is a small snapshot per location for the demo's live view and for /readyz.
 *
 * Cost per poll does not grow with the number of locations nor of workers: the next due location comes from a
 * priority queue of due times (not a scan of every location), and idle workers are parked with one timer for
 * the whole scheduler, which hands each location that falls due to one worker (not every idle worker woken
 * with a timer of its own per poll), so 10,000 quiet locations cost their requests, not 10,000 comparisons or
 * wake-ups per poll.
 */
import TinyQueue from 'tinyqueue';
import type { Logger } from '../logging/logger.js';
import { codeOf, dispositionOf } from '../errors/index.js';
import { backoffDelayMs, type BackoffPolicy } from '../time/backoff.js';
import { startTimer, type Clock, type Timer } from '../time/clock.js';
import { healingOf, stoppedRetryDelayMs, type StoppedRetryPolicy } from './healing.js';
import type { BackfillFigures, BackfillProgress, Lane } from './lanes.js';
import type { LocationSync, LocationTotals } from './location-sync.js';
import type { LocationOffset } from './model.js';
import { phasedDelayMs, pollPhase } from './poll-phase.js';
import type { SyncMetrics } from './ports.js';

export type LocationState = 'waiting' | 'running' | 'backoff' | 'stopped';

export interface LocationStatus {
  locationUid: string;
  state: LocationState;
  offset: LocationOffset;
  traversalId: string | null;
  /** When the location is due next (ms since epoch); null while running or stopped for good. */
  nextRunAt: number | null;
  lastSuccessAt: number | null;
  lastError: { code: string; message: string; at: number } | null;
  consecutiveFailures: number;
  /** The code of the error that stopped the location, until a page succeeds again; null when not stopped. */
  stoppedBy: string | null;
  totals: LocationTotals;
  /** A split location's backfill (lanes.ts) and its progress now; null when not split. */
  backfill: (BackfillFigures & BackfillProgress) | null;
  /** The lane of the turn in progress; null when not running. */
  lane: Lane | null;
}

export interface SchedulerSettings {
  maxLocationsInFlight: number;
  intervalMs: number;
  pagesPerTurn: number;
  shutdownTimeoutMs: number;
  /** Backoff of a location after a failed traversal (attempt = consecutive failures). */
  failureBackoff: Readonly<BackoffPolicy>;
  /** Backoff of a location stopped by a fatal error that can heal (attempt = consecutive stops). */
  stoppedRetry: StoppedRetryPolicy;
}

export interface SchedulerOptions {
  locations: readonly LocationSync[];
  /** Locations are added and removed at run time (distributed mode): see the module comment. */
  dynamic?: boolean;
  settings: SchedulerSettings;
  metrics: SyncMetrics;
  logger: Logger;
  clock: Clock;
}

interface Slot {
  sync: LocationSync;
  /** The location's phase of the poll interval (poll-phase.ts), computed once. */
  phase: number;
  state: LocationState;
  dueAt: number;
  /** Tie-breaker: order in which locations became due. */
  seq: number;
  lastSuccessAt: number | null;
  lastError: LocationStatus['lastError'];
  consecutiveFailures: number;
  /** Consecutive stops by a fatal error; reset by a successful page. */
  stops: number;
  /** The code of the error that stopped the location, until a page succeeds again; null when not stopped. */
  stoppedBy: string | null;
  /** Aborts this location's page in flight (remove() past its bound). */
  abort: AbortController;
  /** The signal of its pages: `abort` or the scheduler's hard stop (one per slot, not one per turn). */
  pageSignal: AbortSignal;
  /** remove() asked for it: no further page; set while a page is in flight, called when the turn ends. */
  removed: (() => void) | null;
  /** No longer scheduled (removed): its entries in the due queue are void. */
  detached: boolean;
  /** Out of the backfill queue while its next history page is read in the background (nextBackfill). */
  awaitingPage: boolean;
  /** In the backfill queue (its history lane waits for a turn). */
  inBackfill: boolean;
  /** The lane of the turn it was handed for (takeDue). */
  lane: Lane;
}

/**
 * An entry of the due queue: a slot's due time as of one requeue. A slot requeued again (its `seq` moved on),
 * running, or detached leaves its older entries void; they are dropped when they reach the head of the queue
 * (no decrease-key needed). At most one live entry per slot.
 */
interface DueEntry {
  slot: Slot;
  dueAt: number;
  seq: number;
}

function byDueTime(a: DueEntry, b: DueEntry): number {
  return a.dueAt - b.dueAt || a.seq - b.seq;
}

function isLive(entry: DueEntry): boolean {
  const { slot } = entry;
  return entry.seq === slot.seq && slot.state !== 'running' && !slot.detached;
}

/**
 * The shortest time one round of idle polls can take: one listing request per location under the
 * process-wide request rate (api.requestsPerSecond). When it exceeds the poll interval, a location is polled
 * every round, not every interval: the data is that much less fresh than the interval promises.
 */
export function minimumRoundMs(locations: number, requestsPerSecond: number): number {
  return (locations / requestsPerSecond) * 1000;
}

export class Scheduler {
  private readonly slots: Slot[];
  /** Due times of the slots not running, earliest first (stopped-for-good slots, due never, are left out). */
  private readonly due = new TinyQueue<DueEntry>([], byDueTime);
  /** Split locations whose history lane waits for a turn, in the order they joined (see the module comment). */
  private readonly backfill: Slot[] = [];
  /** History turns running now: at most `historySlots` (the other slots stay free for live work). */
  private historyTurns = 0;
  /** Slots out of the backfill queue while their next history page is read in the background. */
  private prefetching = 0;
  private seq = 0;
  /** Parked workers (waitForWork), each waiting to be handed a location or released. */
  private readonly idle: Array<(slot: Slot | undefined) => void> = [];
  /** The scheduler's one timer: wakes parked workers at `timerAt`, the earliest due time. */
  private timer: Timer | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  /** run()'s stop signal, for notify(). */
  private stopSignal: AbortSignal | undefined;
  private readonly hardStop = new AbortController();

  constructor(private readonly options: SchedulerOptions) {
    const { settings } = options;
    if (!Number.isInteger(settings.maxLocationsInFlight) || settings.maxLocationsInFlight < 1)
      throw new RangeError('maxLocationsInFlight must be >= 1');
    if (!Number.isInteger(settings.pagesPerTurn) || settings.pagesPerTurn < 1)
      throw new RangeError('pagesPerTurn must be >= 1');
    const uids = new Set(options.locations.map((l) => l.locationUid));
    if (uids.size !== options.locations.length) throw new RangeError('each location may be scheduled once');
    this.slots = options.locations.map((sync) => this.newSlot(sync));
    options.metrics.locationsStopped.reset();
  }

  private newSlot(sync: LocationSync): Slot {
    const abort = new AbortController();
    const slot: Slot = {
      sync,
      phase: pollPhase(sync.locationUid),
      state: 'waiting',
      dueAt: this.options.clock.now(),
      seq: this.seq++,
      lastSuccessAt: null,
      lastError: null,
      consecutiveFailures: 0,
      stops: 0,
      stoppedBy: null,
      abort,
      pageSignal: AbortSignal.any([this.hardStop.signal, abort.signal]),
      removed: null,
      detached: false,
      inBackfill: false,
      awaitingPage: false,
      lane: 'live',
    };
    this.due.push({ slot, dueAt: slot.dueAt, seq: slot.seq });
    return slot;
  }

  /** Schedules locations (due at once). A uid already scheduled (or still leaving) is a RangeError. */
  add(locations: readonly LocationSync[]): void {
    const present = new Set(this.slots.map((s) => s.sync.locationUid));
    for (const sync of locations) {
      if (present.has(sync.locationUid))
        throw new RangeError(`location ${sync.locationUid} is already scheduled`);
      present.add(sync.locationUid);
    }
    for (const sync of locations) this.slots.push(this.newSlot(sync));
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
      if (!uids.has(slot.sync.locationUid) || slot.removed !== null) continue;
      if (slot.state !== 'running') {
        this.detach(slot);
        continue;
      }
      inFlight.push(slot);
      leaving.push(
        new Promise<void>((resolve) => {
          slot.removed = resolve;
        }),
      );
    }
    this.publishStopped();
    if (leaving.length === 0) return;
    const bound = new AbortController();
    const done = Promise.all(leaving);
    void this.options.clock
      .sleep(boundMs, bound.signal)
      .then(() => {
        for (const slot of inFlight)
          slot.abort.abort(new Error('the location was removed: abandoning its page in flight'));
      })
      .catch(() => undefined);
    try {
      await done;
    } finally {
      bound.abort();
    }
  }

  private detach(slot: Slot): void {
    slot.detached = true;
    // A read-ahead its last page started (listing and GETs, on the page signal) must not outlive the
    // location's removal: it would spend API quota at every rebalance for nothing (issue 20).
    if (!slot.abort.signal.aborted) slot.abort.abort(new Error('the location was removed'));
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
  }

  status(): LocationStatus[] {
    return this.slots.map((slot) => ({
      locationUid: slot.sync.locationUid,
      state: slot.state,
      offset: slot.sync.offset,
      traversalId: slot.sync.traversalId,
      nextRunAt: slot.state !== 'running' && Number.isFinite(slot.dueAt) ? slot.dueAt : null,
      lastSuccessAt: slot.lastSuccessAt,
      lastError: slot.lastError,
      consecutiveFailures: slot.consecutiveFailures,
      stoppedBy: slot.stoppedBy,
      totals: { ...slot.sync.totals },
      backfill: slot.sync.backfill ?? null,
      lane: slot.state === 'running' ? slot.lane : null,
    }));
  }

  /** Runs until `signal` aborts (then stops gracefully) or every location is stopped for good. Call once. */
  async run(signal: AbortSignal): Promise<void> {
    this.stopSignal = signal;
    let timer: NodeJS.Timeout | undefined;
    const onStop = () => {
      this.options.logger.info(
        { shutdownTimeoutMs: this.options.settings.shutdownTimeoutMs },
        'stopping: finishing pages in flight',
      );
      timer = setTimeout(
        () => this.hardStop.abort(new Error('shutdown timeout: abandoning pages in flight')),
        this.options.settings.shutdownTimeoutMs,
      );
      timer.unref();
      this.notify();
    };
    if (signal.aborted) onStop();
    else signal.addEventListener('abort', onStop, { once: true });
    const workers = Array.from(
      {
        length: this.options.dynamic
          ? this.options.settings.maxLocationsInFlight
          : Math.min(this.options.settings.maxLocationsInFlight, Math.max(1, this.slots.length)),
      },
      () => this.worker(signal),
    );
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
        const stuck = this.slots.filter((s) => s.state === 'running').map((s) => s.sync.locationUid);
        if (stuck.length > 0)
          this.options.logger.warn(
            { locations: stuck },
            'shutdown timeout passed: abandoning pages still in flight',
          );
      }
    } finally {
      signal.removeEventListener('abort', onStop);
      clearTimeout(timer);
      this.cancelTimer();
    }
  }

  private async worker(stop: AbortSignal): Promise<void> {
    for (;;) {
      if (stop.aborted) return;
      if (this.finished()) {
        this.notify();
        return;
      }
      const slot = this.takeDue() ?? (await this.waitForWork());
      if (slot === undefined) continue;
      if (stop.aborted) {
        // Handed over just before the stop: no new page starts.
        if (slot.lane === 'history') this.historyTurns -= 1;
        this.requeue(slot, 'waiting', 0);
        return;
      }
      await this.turn(slot, stop);
      this.notify();
    }
  }

  /** A static scheduler is done when no location is due ever again, none is running and none backfills. */
  private finished(): boolean {
    return (
      this.options.dynamic !== true &&
      this.nextDue() === undefined &&
      !this.anyRunning() &&
      this.nextBackfill() === undefined &&
      this.prefetching === 0
    );
  }

  /**
   * The first slot of the backfill queue whose next history page is ready for a history turn; none: undefined.
   * Slots that cannot backfill now leave the queue. A slot whose next page is not read yet starts reading it
   * in the background (prefetchHistory; at most `maxLocationsInFlight` at a time, so pages held in memory stay
   * bounded) and leaves the queue until it is ready. A history turn thus holds its location for a commit, not
   * for the listing and single calls of a page, which the location's own live poll would wait for (issue 23:
   * live freshness under a low rate limit). Called by takeDue (which takes the slot out) and finished().
   */
  private nextBackfill(): Slot | undefined {
    let i = 0;
    while (i < this.backfill.length) {
      const slot = this.backfill[i] as Slot;
      if (slot.detached || slot.state !== 'waiting' || slot.sync.hasHistory !== true) {
        this.leaveBackfill(i);
        continue;
      }
      let ahead = slot.sync.historyAhead();
      if (ahead.state === 'none') {
        if (this.prefetching >= this.options.settings.maxLocationsInFlight) {
          i += 1;
          continue;
        }
        slot.sync.prefetchHistory(slot.pageSignal);
        ahead = slot.sync.historyAhead();
      }
      // Ready, or nothing could be read ahead (the turn then reads its page itself).
      if (ahead.state !== 'pending') return slot;
      this.leaveBackfill(i);
      // Once per page: a slot queued again meanwhile (its live traversal completed) must not count twice.
      if (slot.awaitingPage) continue;
      slot.awaitingPage = true;
      this.prefetching += 1;
      void ahead.settled.then(() => {
        slot.awaitingPage = false;
        this.prefetching -= 1;
        this.enqueueBackfill(slot);
        this.notify();
      });
    }
    return undefined;
  }

  private leaveBackfill(index: number): void {
    const [slot] = this.backfill.splice(index, 1);
    if (slot !== undefined) slot.inBackfill = false;
  }

  /**
   * How many history turns may run at once: half the slots (at least one). The others are kept for live work,
   * so a location falling due finds a worker at once instead of waiting for a history page (of up to
   * api.pageSize single calls at the budget left) to finish; and fewer history pages at a time each finish
   * sooner, which is what a split location's own live poll waits for.
   */
  private historySlots(): number {
    return Math.max(1, Math.floor(this.options.settings.maxLocationsInFlight / 2));
  }

  /** Puts a split location in the backfill queue (once). */
  private enqueueBackfill(slot: Slot): void {
    if (slot.inBackfill || slot.detached || slot.sync.hasHistory !== true) return;
    slot.inBackfill = true;
    this.backfill.push(slot);
  }

  /** Whether live work is due now (a due location waiting for a worker). */
  private liveWorkDue(): boolean {
    const head = this.nextDue();
    return head !== undefined && head.dueAt <= this.options.clock.now();
  }

  /** The earliest live entry of the due queue (void ones at the head are dropped); undefined when none. */
  private nextDue(): DueEntry | undefined {
    let head = this.due.peek();
    while (head !== undefined && !isLive(head)) {
      this.due.pop();
      head = this.due.peek();
    }
    return head;
  }

  private anyRunning(): boolean {
    return this.slots.some((s) => s.state === 'running');
  }

  /**
   * The location due first (earliest due time, then the order it became due) for a live turn, else the head
   * of the backfill queue for a history turn, marked running; or none yet.
   */
  private takeDue(): Slot | undefined {
    const head = this.nextDue();
    if (head !== undefined && head.dueAt <= this.options.clock.now()) {
      this.due.pop();
      head.slot.state = 'running';
      head.slot.lane = 'live';
      return head.slot;
    }
    if (this.historyTurns >= this.historySlots()) return undefined;
    const backfill = this.nextBackfill();
    if (backfill === undefined) return undefined;
    this.historyTurns += 1;
    this.leaveBackfill(this.backfill.indexOf(backfill));
    backfill.state = 'running';
    backfill.lane = 'history';
    return backfill;
  }

  /**
   * Parks a worker until notify() hands it a location (marked running) or releases it (undefined: stop,
   * or nothing left to do). Idle workers cost nothing while they wait: one timer for the whole scheduler
   * (armed for the earliest due time) wakes exactly as many workers as there are locations due, so a poll
   * costs one wake-up, not one per worker.
   */
  private waitForWork(): Promise<Slot | undefined> {
    const parked = new Promise<Slot | undefined>((resolve) => this.idle.push(resolve));
    this.armTimer();
    return parked;
  }

  /**
   * Hands the locations now due to parked workers, one each, and re-arms the timer for the next due time;
   * on stop, or when a static scheduler has nothing left, releases every parked worker. Called whenever
   * work may have changed: a turn ended, locations were added, the timer fired, the stop began.
   */
  private notify(): void {
    if (this.stopSignal?.aborted === true || this.finished()) {
      this.cancelTimer();
      for (const release of this.idle.splice(0)) release(undefined);
      return;
    }
    while (this.idle.length > 0) {
      const slot = this.takeDue();
      if (slot === undefined) break;
      this.idle.pop()?.(slot);
    }
    this.armTimer();
  }

  /**
   * Keeps the one timer at or before the earliest due time while a worker is parked. A timer armed earlier
   * than needed is left to fire (notify then re-arms it): cheaper than cancelling, which a location taken by
   * a worker just before its timer would otherwise cost on every poll.
   */
  private armTimer(): void {
    if (this.idle.length === 0) return;
    const at = this.nextDue()?.dueAt ?? Number.POSITIVE_INFINITY;
    if (at >= this.timerAt) return;
    this.cancelTimer();
    if (!Number.isFinite(at)) return;
    const { clock } = this.options;
    this.timerAt = at;
    this.timer = startTimer(clock, Math.max(0, at - clock.now()), () => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.notify();
    });
  }

  private cancelTimer(): void {
    this.timer?.cancel();
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private async turn(slot: Slot, stop: AbortSignal): Promise<void> {
    if (slot.lane === 'history') return this.historyTurn(slot, stop);
    const { settings, clock } = this.options;
    const { pageSignal } = slot;
    try {
      for (let page = 0; page < settings.pagesPerTurn; page++) {
        const report = await slot.sync.runPage(pageSignal);
        // Only progress clears the failure count: a restarted cursor, or a page that publishes nothing between
        // restarts, would otherwise retry a failing location 1-250 ms later, cycle after cycle (issue 20).
        const progressed = report.complete || report.published > 0;
        if (progressed) slot.consecutiveFailures = 0;
        // Likewise a stopped location counts as resumed only on progress: a restart right before the same
        // fatal error would otherwise clear its stops, and its stopped-retry backoff would never grow.
        if (slot.stops > 0 && progressed) this.resumed(slot);
        if (report.complete) {
          slot.lastSuccessAt = clock.now();
          // Due again at the location's phase of the interval, so idle polls spread evenly (poll-phase.ts).
          this.requeue(slot, 'waiting', phasedDelayMs(clock.now(), settings.intervalMs, slot.phase));
          // Its history lane, if split, reads in the time until then, when no live work is due.
          this.enqueueBackfill(slot);
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
   * A history turn: pages of the location's history lane until `pagesPerTurn`, the lanes merge, or live work
   * is due (its own or another location's). Its live lane stays due when it was.
   */
  private async historyTurn(slot: Slot, stop: AbortSignal): Promise<void> {
    const { settings, clock } = this.options;
    const liveDueAt = slot.dueAt;
    try {
      for (let page = 0; page < settings.pagesPerTurn; page++) {
        const report = await slot.sync.runPage(slot.pageSignal, 'history');
        const progressed = report.complete || report.published > 0;
        if (progressed) slot.consecutiveFailures = 0;
        if (slot.stops > 0 && progressed) this.resumed(slot);
        if (slot.sync.hasHistory !== true || stop.aborted || slot.removed !== null) break;
        if (liveDueAt <= clock.now() || this.liveWorkDue()) break;
        // Its next page is still being read (its commit started it): the slot comes back when it is ready.
        if (slot.sync.historyAhead().state === 'pending') break;
      }
      this.requeue(slot, 'waiting', Math.max(0, liveDueAt - clock.now()));
      this.enqueueBackfill(slot);
    } catch (error) {
      this.failed(slot, error);
    } finally {
      this.historyTurns -= 1;
      this.turnEnded(slot);
    }
  }

  /** A turn failed: retry the location after a backoff, or stop it (see the module comment). */
  private failed(slot: Slot, error: unknown): void {
    const { settings, metrics, clock, logger } = this.options;
    const location = metrics.location(slot.sync.locationUid);
    if (this.hardStop.signal.aborted || slot.removed !== null) {
      this.requeue(slot, 'waiting', 0);
      return;
    }
    const code = codeOf(error);
    const message = error instanceof Error ? error.message : String(error);
    slot.lastError = { code, message, at: clock.now() };
    metrics.locationErrors.inc({ location, code });
    if (dispositionOf(error) === 'retriable') {
      this.clearStop(slot);
      slot.consecutiveFailures += 1;
      const wait = Math.max(
        1,
        backoffDelayMs(settings.failureBackoff, Math.min(slot.consecutiveFailures, 30), clock.random()),
      );
      logger.warn(
        {
          location: slot.sync.locationUid,
          traversal: slot.sync.traversalId,
          code,
          err: error,
          retryInMs: wait,
        },
        'location traversal failed; will retry',
      );
      this.requeue(slot, 'backoff', wait);
      return;
    }
    this.stopLocation(slot, error, code);
  }

  /** A turn is over: a location removed meanwhile leaves now. */
  private turnEnded(slot: Slot): void {
    const removed = slot.removed;
    if (removed !== null) {
      this.detach(slot);
      this.publishStopped();
      removed();
    }
  }

  /** Stops a location; one that can heal is due again after the stopped-location backoff. */
  private stopLocation(slot: Slot, error: unknown, code: string): void {
    const { settings, clock, logger } = this.options;
    const healing = healingOf(error);
    slot.stops += 1;
    slot.stoppedBy = code;
    const retryInMs =
      healing === 'never'
        ? null
        : stoppedRetryDelayMs(settings.stoppedRetry, healing, slot.stops, clock.random());
    this.requeue(slot, 'stopped', retryInMs ?? Number.POSITIVE_INFINITY);
    this.publishStopped();
    logger.error(
      {
        location: slot.sync.locationUid,
        traversal: slot.sync.traversalId,
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
  }

  /** A page of a stopped location went through: it is no longer stopped and its backoff starts over. */
  private resumed(slot: Slot): void {
    this.options.logger.info(
      { location: slot.sync.locationUid, stoppedBy: slot.lastError?.code, stops: slot.stops },
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

  /** Gauge locations_stopped{code}: locations counted as stopped, by the code that stopped them. */
  private publishStopped(): void {
    const byCode = new Map<string, number>();
    for (const slot of this.slots)
      if (slot.stoppedBy !== null) byCode.set(slot.stoppedBy, (byCode.get(slot.stoppedBy) ?? 0) + 1);
    const gauge = this.options.metrics.locationsStopped;
    gauge.reset();
    for (const [code, count] of byCode) gauge.set({ code }, count);
  }

  private requeue(slot: Slot, state: LocationState, delayMs: number): void {
    slot.state = state;
    slot.dueAt = this.options.clock.now() + delayMs;
    slot.seq = this.seq++;
    if (Number.isFinite(slot.dueAt)) this.due.push({ slot, dueAt: slot.dueAt, seq: slot.seq });
  }
}
