/**
 * The scheduler's stretched interval (stretch-rule.ts gives the rule): when the live polls alone would exceed
 * their share of the request budget or of the workers, every location's interval is stretched evenly (gauge
 * poll_effective_interval_seconds, one warning when it stretches and one when it recovers), and history still
 * advances at its share.
 *
 * It keeps what the rule measures, on the injected clock: the busy time of the live pages (each page timed by
 * `pageStarted` / `pageEnded`, less its waits for the rate limiter, limiter-wait.ts), the pages running, and the
 * locations scheduled per rate-limit scope (grant), counted as locations come and go. The interval is worked out
 * again when a live page ends and, while it is stretched, on a timer every quarter window, so it recovers on
 * the clock even when stretched intervals make live turns rare; `onShorter` then tells the scheduler, which
 * brings the waiting polls forward.
 */
import type { Logger } from '../../logging/logger.js';
import { startTimer, type Clock, type Timer } from '../../time/clock.js';
import { LimiterWaitTally } from './limiter-wait.js';
import {
  addToSum,
  busyShare,
  decayedValue,
  effectiveIntervalMs,
  EMPTY_SUM,
  isStretched,
  nextWorkerStretch,
  NO_STRETCH,
  pageBusyMs,
  stretchWindowMs,
  type DecayingSum,
  type WorkerStretch,
} from './stretch-rule.js';
import type { RateLimitScopes, SyncMetrics } from '../ports.js';

/** What the rule needs from the scheduler when it works the interval out. */
export interface LiveContext {
  /** Locations scheduled now. */
  locations: number;
  /** Share of requests and turns live may take now (1 when no history waits). */
  liveShare: number;
}

export interface IntervalStretchOptions {
  /** poll.intervalMs. */
  configuredMs: number;
  /** poll.maxLocationsInFlight. */
  workers: number;
  scopes: Pick<RateLimitScopes, 'ratePerSecond' | 'liveGrantedPerSecond'>;
  metrics: Pick<SyncMetrics, 'pollEffectiveInterval'>;
  logger: Logger;
  clock: Clock;
  /** The scheduler's figures now. */
  context: () => LiveContext;
  /** The interval became shorter (`intervalMs`, on the timer): polls due later than it says may come sooner. */
  onShorter?: (intervalMs: number) => void;
}

/** A live page being timed (pageStarted to pageEnded). */
export interface LivePageTimer {
  readonly startedAtMs: number;
  /** Counts the page's waits for the rate limiter: run the page under it (limiter-wait.ts). */
  readonly limiterWaits: LimiterWaitTally;
}

export class IntervalStretch {
  /** The interval locations are polled at now, and whether that was reported as stretched. */
  private current: number;
  private stretched = false;
  private worker: WorkerStretch = NO_STRETCH;
  /** Busy ms of the live pages ended, decaying over the window. */
  private ended: DecayingSum = EMPTY_SUM;
  private readonly running = new Set<LivePageTimer>();
  /** Locations scheduled per rate-limit scope, kept as they come and go. */
  private readonly perScope = new Map<string, number>();
  private readonly windowMs: number;
  private timer: Timer | null = null;
  private disposed = false;

  constructor(private readonly options: IntervalStretchOptions) {
    this.current = options.configuredMs;
    this.windowMs = stretchWindowMs(options.configuredMs);
    options.metrics.pollEffectiveInterval.set(options.configuredMs / 1000);
  }

  /** The interval (ms) locations are polled at now. */
  get intervalMs(): number {
    return this.current;
  }

  /** The worker stretch factor now (1: the workers do not bound the interval). */
  get workerFactor(): number {
    return this.worker.factor;
  }

  /** A location of rate-limit scope `scope` was scheduled. */
  locationAdded(scope: string): void {
    this.perScope.set(scope, (this.perScope.get(scope) ?? 0) + 1);
  }

  /** A location of rate-limit scope `scope` was unscheduled. */
  locationRemoved(scope: string): void {
    this.perScope.set(scope, (this.perScope.get(scope) ?? 1) - 1);
  }

  /** A live page starts: time it until `pageEnded`. */
  pageStarted(): LivePageTimer {
    const { clock } = this.options;
    const page: LivePageTimer = { startedAtMs: clock.now(), limiterWaits: new LimiterWaitTally(clock) };
    this.running.add(page);
    return page;
  }

  /**
   * A live page ended (`progressed`: it completed the traversal or published something; a page that failed
   * made none): its busy time is counted and the interval worked out again.
   */
  pageEnded(page: LivePageTimer, progressed: boolean): void {
    if (!this.running.delete(page)) return;
    const now = this.options.clock.now();
    const busy = pageBusyMs({
      startedAtMs: page.startedAtMs,
      endedAtMs: now,
      limiterWaitMs: page.limiterWaits.close(),
      progressed,
    });
    if (busy > 0) this.ended = addToSum(this.ended, now, busy, this.windowMs);
    this.update();
  }

  /** Stops the timer (the scheduler's run is over). */
  dispose(): void {
    this.disposed = true;
    this.timer?.cancel();
    this.timer = null;
  }

  /** Works the interval out from the measurements now; the gauge follows and a change of verdict is said once. */
  update(): number {
    const { configuredMs, workers, scopes, metrics, logger, clock } = this.options;
    const { locations, liveShare } = this.options.context();
    const now = clock.now();
    const share = busyShare({
      endedBusyMs: decayedValue(this.ended, now, this.windowMs),
      runningBusyMs: [...this.running].map((p) => now - p.startedAtMs - p.limiterWaits.waitedMs()),
      windowMs: this.windowMs,
      workers,
    });
    this.worker = nextWorkerStretch(this.worker, {
      nowMs: now,
      busyShare: share,
      liveShare,
      locations,
      workers,
      windowMs: this.windowMs,
    });
    const previous = this.current;
    const effective = effectiveIntervalMs({
      configuredMs,
      workerFactor: this.worker.factor,
      scopes: [...this.perScope].map(([scope, count]) => ({
        locations: count,
        ratePerSecond: scopes.ratePerSecond(scope),
        liveGrantedPerSecond: scopes.liveGrantedPerSecond?.(scope) ?? null,
      })),
      liveShare,
      currentMs: previous,
    });
    this.current = effective;
    if (effective !== previous) metrics.pollEffectiveInterval.set(effective / 1000);
    this.armTimer(effective > configuredMs);
    const stretched = isStretched(effective, configuredMs, this.stretched);
    if (stretched !== this.stretched) {
      this.stretched = stretched;
      const figures = {
        intervalMs: configuredMs,
        effectiveIntervalMs: Math.round(effective),
        locations,
        workerBusyShare: Math.round(share * 1000) / 1000,
        workerFactor: Math.round(this.worker.factor * 1000) / 1000,
        liveShare,
      };
      if (stretched)
        logger.warn(
          figures,
          'live polls alone exceed their share of the API budget or of the workers: every location is polled at effectiveIntervalMs instead of poll.intervalMs, history keeps its share (docs/runbook.md)',
        );
      else logger.info(figures, 'polls are back at poll.intervalMs');
    }
    return effective;
  }

  /** While stretched, works the interval out again every quarter window, so it recovers on the clock. */
  private armTimer(needed: boolean): void {
    if (!needed || this.disposed) {
      this.timer?.cancel();
      this.timer = null;
      return;
    }
    if (this.timer !== null) return;
    this.timer = startTimer(
      this.options.clock,
      this.windowMs / 4,
      () => {
        this.timer = null;
        const before = this.current;
        const after = this.update();
        if (after < before) this.options.onShorter?.(after);
      },
      { unref: true },
    );
  }
}
