/**
 * The scheduler's stretched interval (poll-stretch.ts gives the rule): when the live polls alone would exceed
 * their share of the request budget or of the workers, every location's interval is stretched evenly (gauge
 * poll_effective_interval_seconds, one warning when it stretches and one when it recovers), and history still
 * advances at its share. It keeps what the rule reads: the moving average of live turn durations and the
 * locations scheduled per rate-limit scope (grant), counted as locations come and go, so the cost of a poll
 * grows with neither the locations nor the workers.
 */
import type { Logger } from '../logging/logger.js';
import { averageTurnMs, effectiveIntervalMs, isStretched } from './poll-stretch.js';
import type { RateLimitScopes, SyncMetrics } from './ports.js';

export interface IntervalStretchOptions {
  /** poll.intervalMs. */
  configuredMs: number;
  /** poll.maxLocationsInFlight. */
  workers: number;
  scopes: Pick<RateLimitScopes, 'ratePerSecond'>;
  metrics: Pick<SyncMetrics, 'pollEffectiveInterval'>;
  logger: Logger;
}

/** What a live turn's end adds to the stretch rule's inputs, as the scheduler sees it then. */
export interface LiveTurnContext {
  /** Locations scheduled now. */
  locations: number;
  /** Share of requests and turns live may take now (1 when no history waits). */
  liveShare: number;
}

export class IntervalStretch {
  /** Moving average of live turn durations (ms). */
  private liveTurnMs: number | null = null;
  /** The interval locations are polled at now, and whether that was reported as stretched. */
  private current: number;
  private stretched = false;
  /** Locations scheduled per rate-limit scope, kept as they come and go (the rule reads it per poll). */
  private readonly perScope = new Map<string, number>();

  constructor(private readonly options: IntervalStretchOptions) {
    this.current = options.configuredMs;
    options.metrics.pollEffectiveInterval.set(options.configuredMs / 1000);
  }

  /** The interval (ms) locations are polled at now. */
  get intervalMs(): number {
    return this.current;
  }

  /** A location of rate-limit scope `scope` was scheduled. */
  locationAdded(scope: string): void {
    this.perScope.set(scope, (this.perScope.get(scope) ?? 0) + 1);
  }

  /** A location of rate-limit scope `scope` was unscheduled. */
  locationRemoved(scope: string): void {
    this.perScope.set(scope, (this.perScope.get(scope) ?? 1) - 1);
  }

  /**
   * A live traversal completed in one turn of `turnMs`: the stretch rule (poll-stretch.ts) says the interval
   * locations are polled at now; the gauge follows it and a change of its verdict is said once.
   */
  liveTurnEnded(turnMs: number, { locations, liveShare }: LiveTurnContext): void {
    const { configuredMs, workers, scopes, metrics, logger } = this.options;
    const liveTurnMs = averageTurnMs(this.liveTurnMs, turnMs);
    this.liveTurnMs = liveTurnMs;
    const effective = effectiveIntervalMs({
      configuredMs,
      locations,
      scopes: [...this.perScope].map(([scope, count]) => ({
        locations: count,
        ratePerSecond: scopes.ratePerSecond(scope),
      })),
      liveTurnMs,
      workers,
      liveShare,
    });
    this.current = effective;
    metrics.pollEffectiveInterval.set(effective / 1000);
    const stretched = isStretched(effective, configuredMs, this.stretched);
    if (stretched === this.stretched) return;
    this.stretched = stretched;
    const figures = {
      intervalMs: configuredMs,
      effectiveIntervalMs: Math.round(effective),
      locations,
      liveTurnMs: Math.round(liveTurnMs),
      liveShare,
    };
    if (stretched)
      logger.warn(
        figures,
        'live polls alone exceed their share of the API budget or of the workers: every location is polled at effectiveIntervalMs instead of poll.intervalMs, history keeps its share (docs/runbook.md)',
      );
    else logger.info(figures, 'polls are back at poll.intervalMs');
  }
}
