/**
 * One limiter scope (a grant, or the whole process): request starts spaced evenly at the scope's learned
 * rate (aimd.ts), live requests before backfill ones, and the whole scope held while the API asked to wait.
 *
 * - Pace: starts are 1/rate apart, never in bursts (an API's token bucket with a small burst would refuse
 *   them); a start a timer fired late for may catch up one interval, no more.
 * - Priority: the waiters of `live` go first (polls of caught-up locations and their single calls), then
 *   `backfill`, each in arrival order: a tight budget delays history, not the present. Not to the end:
 *   of the starts granted while backfill waits, `backfillShare` are owed to it, and a start goes to
 *   backfill ahead of live once a whole one is owed. Live alone taking the whole budget (short intervals,
 *   many locations, polls that re-list a large same-instant group) would otherwise starve history for
 *   ever; below that, backfill gets its share from the starts live leaves, and live never waits for it.
 * - Hold: a refusal's Retry-After (or a backoff when it has none) holds every start of the scope until
 *   then, not the one request: the others would be refused too. A quota announced as exhausted
 *   (remaining 0 until its reset) holds it the same way; one whose reset makes no sense (headers.ts,
 *   `implausible`) holds for a backoff instead. Every hold is bounded: none lasts longer than
 *   `maxHoldMs` from the moment it is asked for, whatever the API announced (a quota spent for a day is
 *   tried again after each bounded hold, and refused again until it resets: the scope is back at most
 *   `maxHoldMs` after the quota is). A hold of at least `parkAfterMs` is reported as throttled (status,
 *   metrics); either way it ends by itself.
 * - Rate: a refusal for flow control (no Retry-After, or one of at most `maxHoldMs`) decreases the learned
 *   rate (aimd.ts); one asking for longer (a spent quota, capped) does not: the API asked for later, not
 *   slower, and after the hold the scope goes on at the rate it had.
 * - Parked (with `refuseWhileParked`, the connector's): while the scope is throttled, no request waits for
 *   it: `acquire` rejects at once, and the waiters when such a hold begins, with ScopeThrottledError
 *   (retriable, API_SCOPE_THROTTLED). The page that asked fails, and the scheduler parks its location until
 *   the hold ends without holding a worker: one grant's long hold must not take the workers of the
 *   others. Shorter holds are waited out; without the setting (tools) every hold is.
 *
 * Time comes from the injected Clock; the only timer is the one that wakes the next waiter.
 */
import { RetriableError } from '../../errors/index.js';
import { backoffDelayMs } from '../../time/backoff.js';
import { startTimer, type Clock, type Timer } from '../../time/clock.js';
import { limiterWaitBegan } from '../../sync/scheduler/limiter-wait.js';
import { addToSum, decayedValue, EMPTY_SUM, type DecayingSum } from '../../sync/scheduler/stretch-rule.js';
import type { Announced } from './headers.js';
import {
  initialAimd,
  onAnnounced,
  onAnswered,
  onRefused,
  type AimdSettings,
  type AimdState,
} from './aimd.js';

export type RequestPriority = 'live' | 'backfill';

/** Time constant (ms) of the scope's own figures: requests granted and refused per second, recently. */
export const FIGURES_WINDOW_MS = 30_000;

/** A refusal this soon after a hold ended decreases the rate deeper (aimd.ts deepDecrease). */
const DEEP_WINDOW_MS = 1_000;

/** What a granted start carries back to `answered` / `refused`. */
export interface Grant {
  /** When the start was granted (the scope's clock). */
  sentAtMs: number;
  /** It waited for the pace: the rate was the bottleneck (the rate may grow). */
  paced: boolean;
}

export interface ScopeLimiterSettings extends AimdSettings {
  /** A hold at least this long is "throttled" (a parked scope), shorter ones are plain flow control. */
  parkAfterMs: number;
  /**
   * Fraction (0..1) of the starts granted while backfill requests wait that backfill is owed, even when
   * live requests wait too (0: strictly live first). Owed starts are not banked while backfill is idle.
   */
  backfillShare: number;
  /**
   * Hold after a refusal without a readable Retry-After (or a spent quota without a readable reset):
   * this, doubled per one in a row, up to maxHoldBackoffMs.
   */
  holdBackoffMs: number;
  maxHoldBackoffMs: number;
  /** No hold lasts longer than this from when it is asked for (api.retry.maxRetryAfterMs). */
  maxHoldMs: number;
  /** Refuse the requests of a parked scope instead of queueing them (see the module comment). */
  refuseWhileParked?: boolean;
}

/** A request of a parked (throttled) scope: not sent; the scope is held until `heldUntilMs`. */
export class ScopeThrottledError extends RetriableError {
  constructor(readonly heldUntilMs: number) {
    super(
      'API_SCOPE_THROTTLED',
      `the rate-limit scope is parked until ${new Date(heldUntilMs).toISOString()}: the request waits for then`,
      { details: { heldUntilMs } },
    );
  }
}

export interface ScopeObserver {
  refused(): void;
  /** A request start was granted, at `priority`: how the scope's budget went to live and to history. */
  granted?(priority: RequestPriority): void;
}

interface Waiter {
  priority: RequestPriority;
  resolve(grant: Grant): void;
  reject(reason: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

export interface ScopeSnapshot {
  ratePerSecond: number;
  announcedPerSecond: number | null;
  /** Held (flow control) until then; null when not held. */
  heldUntilMs: number | null;
  /** Time held so far, all holds together, up to now (the throttled-seconds counter). */
  heldSeconds: number;
  /** Held for longer than parkAfterMs: the scope's locations wait (throttled) until heldUntilMs. */
  throttled: boolean;
  waiting: { live: number; backfill: number };
}

/** The scope's own demand figures: requests granted (by priority) and refused per second, recently. */
export interface ScopeDemand {
  grantedPerSecond: { live: number; backfill: number };
  refusedPerSecond: number;
}

export class ScopeLimiter {
  private state: AimdState;
  private nextStartMs = Number.NEGATIVE_INFINITY;
  private heldUntilMs = Number.NEGATIVE_INFINITY;
  private holdStartedMs = Number.NEGATIVE_INFINITY;
  /** Length of the holds that ended before the current one began. */
  private pastHoldsMs = 0;
  private refusalsInRow = 0;
  /** Answers in a row announcing a spent quota whose reset makes no sense (each backs off longer). */
  private unreadableResetsInRow = 0;
  /** Starts owed to backfill (see backfillShare): grows by the share per start granted while it waits. */
  private backfillOwed = 0;
  private readonly waiters: Record<RequestPriority, Waiter[]> = { live: [], backfill: [] };
  private timer: Timer | null = null;
  private timerAtMs = Number.POSITIVE_INFINITY;
  /** Starts granted and refusals, decaying over FIGURES_WINDOW_MS (the scope's own demand figures). */
  private granted: Record<RequestPriority, DecayingSum> = { live: EMPTY_SUM, backfill: EMPTY_SUM };
  private refusals: DecayingSum = EMPTY_SUM;

  constructor(
    private readonly clock: Clock,
    private readonly settings: ScopeLimiterSettings,
    private readonly observer: ScopeObserver = { refused: () => undefined },
  ) {
    this.state = initialAimd(settings);
  }

  /** Resolves when a request of `priority` may start; rejects with the signal's reason on abort. */
  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<Grant> {
    signal?.throwIfAborted();
    const now = this.clock.now();
    if (this.parked(now)) return Promise.reject(new ScopeThrottledError(this.heldUntilMs));
    if (this.waiting() === 0 && now >= this.startAllowedAtMs())
      return Promise.resolve(this.grant(now, false, priority));
    // The wait is not the page's worker time (sync/scheduler/limiter-wait.ts): it ends however the wait does.
    const waitEnded = limiterWaitBegan();
    return new Promise<Grant>((resolve, reject) => {
      // A waiter is rejected with what rejectWaiters or its signal gives (an Error as a rule).
      const fail: (reason: unknown) => void = reject;
      const waiter: Waiter = {
        priority,
        resolve: (grant) => {
          waitEnded();
          resolve(grant);
        },
        reject: (reason) => {
          waitEnded();
          fail(reason);
        },
        signal,
        onAbort: undefined,
      };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          const queue = this.waiters[priority];
          const at = queue.indexOf(waiter);
          if (at >= 0) queue.splice(at, 1);
          waiter.reject(signal.reason as Error);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters[priority].push(waiter);
      this.schedule();
    });
  }

  /** The API answered a request of this scope (not a refusal); `announced` is what its headers said. */
  answered(grant: Grant, announced: Announced): void {
    this.refusalsInRow = 0;
    if (announced.ratePerSecond !== null)
      this.state = onAnnounced(this.state, this.settings, announced.ratePerSecond);
    this.state = onAnswered(this.state, this.settings, grant.paced, this.clock.now());
    // A quota announced as spent: nothing more goes until it resets, or for a backoff when the reset makes
    // no sense (the answers after it tell again).
    const spentUntil = announced.remaining === 0 ? announced.reset : null;
    if (spentUntil?.kind !== 'implausible') this.unreadableResetsInRow = 0;
    if (spentUntil === null) return;
    const now = this.clock.now();
    if (spentUntil.kind === 'hold') {
      this.holdUntil(now + spentUntil.holdMs);
    } else {
      this.unreadableResetsInRow += 1;
      this.holdUntil(now + this.backoffMs(this.unreadableResetsInRow));
    }
  }

  /**
   * The API refused a request of this scope (429, or 503 with Retry-After); `retryAfterMs` (as the API
   * asked, not capped) null when absent or unreadable.
   *
   * A refusal asking for longer than `maxHoldMs` (a spent quota: `Retry-After: 900`, held for maxHoldMs at a
   * time) holds the scope but teaches the rate nothing: the API said "later", not "slower". Counting it cut the rate at the first
   * refusal and again, deeper, at each bounded probe that met the still-spent quota, so the grant came back
   * from its hold far below what it sent before (under a spent quota, a grant committed again only 100 s after
   * the quota returned).
   */
  refused(grant: Grant, retryAfterMs: number | null): void {
    const now = this.clock.now();
    this.observer.refused();
    this.refusals = addToSum(this.refusals, now, 1, FIGURES_WINDOW_MS);
    if (retryAfterMs === null || retryAfterMs <= this.settings.maxHoldMs) {
      // Refused within a second of the last hold's end: the bucket that hold refilled is spent already.
      const sinceHold = grant.sentAtMs - this.heldUntilMs;
      const deep = sinceHold >= 0 && sinceHold < DEEP_WINDOW_MS;
      this.state = onRefused(this.state, this.settings, grant.sentAtMs, now, deep);
    }
    this.refusalsInRow += 1;
    this.holdUntil(now + (retryAfterMs ?? this.backoffMs(this.refusalsInRow)));
  }

  /** When the scope's hold ends (ms since epoch), or null when it is not held now. */
  heldUntil(): number | null {
    return this.heldUntilMs > this.clock.now() ? this.heldUntilMs : null;
  }

  /** Live requests granted per second recently (FIGURES_WINDOW_MS): the scope's own live demand figure. */
  get liveGrantedPerSecond(): number {
    return this.perSecond(this.granted.live);
  }

  /** The rate the scope paces its starts at now (requests per second). */
  get ratePerSecond(): number {
    return this.state.rate;
  }

  snapshot(): ScopeSnapshot {
    const now = this.clock.now();
    const held = this.heldUntilMs > now;
    return {
      ratePerSecond: this.state.rate,
      announcedPerSecond: this.state.announced,
      heldUntilMs: held ? this.heldUntilMs : null,
      heldSeconds:
        (this.pastHoldsMs + Math.max(0, Math.min(now, this.heldUntilMs) - this.holdStartedMs)) / 1000,
      throttled: held && this.heldUntilMs - this.holdStartedMs >= this.settings.parkAfterMs,
      waiting: { live: this.waiters.live.length, backfill: this.waiters.backfill.length },
    };
  }

  /** Requests granted and refused per second over the last FIGURES_WINDOW_MS or so (decaying on the clock). */
  demand(): ScopeDemand {
    return {
      grantedPerSecond: {
        live: this.perSecond(this.granted.live),
        backfill: this.perSecond(this.granted.backfill),
      },
      refusedPerSecond: this.perSecond(this.refusals),
    };
  }

  /** A decaying count's rate per second now (a steady rate r per ms sums to r × the window). */
  private perSecond(sum: DecayingSum): number {
    return (decayedValue(sum, this.clock.now(), FIGURES_WINDOW_MS) * 1000) / FIGURES_WINDOW_MS;
  }

  /** Rejects every waiter (shutdown). */
  close(reason: unknown): void {
    this.timer?.cancel();
    this.timer = null;
    this.rejectWaiters(reason);
  }

  /** Holds doubling from holdBackoffMs to maxHoldBackoffMs (time/backoff.ts), not jittered. */
  private backoffMs(inRow: number): number {
    return backoffDelayMs(
      {
        initialDelayMs: this.settings.holdBackoffMs,
        maxDelayMs: this.settings.maxHoldBackoffMs,
        multiplier: 2,
        jitter: 0,
      },
      inRow,
      0,
    );
  }

  /** Holds the scope until `askedUntilMs`, or for maxHoldMs from now when that is sooner. */
  private holdUntil(askedUntilMs: number): void {
    const now = this.clock.now();
    const untilMs = Math.min(askedUntilMs, now + this.settings.maxHoldMs);
    if (untilMs <= this.heldUntilMs || untilMs <= now) return;
    if (this.heldUntilMs <= now) {
      // A new hold: the last one is over, its whole length counted.
      if (this.heldUntilMs > this.holdStartedMs) this.pastHoldsMs += this.heldUntilMs - this.holdStartedMs;
      this.holdStartedMs = now;
    }
    this.heldUntilMs = untilMs;
    if (this.parked(now)) this.rejectWaiters(new ScopeThrottledError(untilMs));
    this.schedule();
  }

  /** Held now by a hold of at least parkAfterMs (throttled). */
  private parked(now: number): boolean {
    return (
      this.settings.refuseWhileParked === true &&
      this.heldUntilMs > now &&
      this.heldUntilMs - this.holdStartedMs >= this.settings.parkAfterMs
    );
  }

  private rejectWaiters(reason: unknown): void {
    for (const queue of [this.waiters.live, this.waiters.backfill]) {
      for (const waiter of queue.splice(0)) {
        if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
        waiter.reject(reason);
      }
    }
  }

  private waiting(): number {
    return this.waiters.live.length + this.waiters.backfill.length;
  }

  private startAllowedAtMs(): number {
    return Math.max(this.nextStartMs, this.heldUntilMs);
  }

  private grant(now: number, paced: boolean, priority: RequestPriority): Grant {
    this.granted[priority] = addToSum(this.granted[priority], now, 1, FIGURES_WINDOW_MS);
    this.observer.granted?.(priority);
    const interval = 1000 / this.state.rate;
    // A paced start a timer fired late for (by up to one interval) keeps the pace's own schedule, so the
    // next one may catch up; an idle scope, or one coming out of a hold, banks nothing.
    const late = now - this.nextStartMs;
    const base = paced && late >= 0 && late <= interval ? this.nextStartMs : now;
    this.nextStartMs = base + interval;
    return { sentAtMs: now, paced };
  }

  /** The waiter the next start goes to (someone waits): live first, unless backfill is owed a start. */
  private nextWaiter(): Waiter {
    const { live, backfill } = this.waiters;
    if (backfill.length === 0) return live.shift() as Waiter;
    this.backfillOwed += this.settings.backfillShare;
    if (live.length > 0 && this.backfillOwed < 1) return live.shift() as Waiter;
    // Backfill's start, owed or left by live: it pays one owed start; a surplus is not held against it.
    this.backfillOwed = Math.max(0, this.backfillOwed - 1);
    return backfill.shift() as Waiter;
  }

  /** Arms the timer for the next start, when someone waits. */
  private schedule(): void {
    if (this.waiting() === 0) return;
    const at = this.startAllowedAtMs();
    if (this.timer !== null && this.timerAtMs === at) return;
    this.timer?.cancel();
    this.timerAtMs = at;
    this.timer = startTimer(this.clock, Math.max(0, at - this.clock.now()), () => {
      this.timer = null;
      this.timerAtMs = Number.POSITIVE_INFINITY;
      this.pump();
    });
  }

  private pump(): void {
    const now = this.clock.now();
    while (this.waiting() > 0 && now >= this.startAllowedAtMs()) {
      const waiter = this.nextWaiter();
      if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(this.grant(now, true, waiter.priority));
    }
    this.schedule();
  }
}
