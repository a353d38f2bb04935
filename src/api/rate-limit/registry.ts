/**
 * The limiter scopes of one process, created on first use: one per grant (api.rateLimit.scope `grant`, the
 * default: APIs usually limit per access token) or one for every request (`global`). Several instances
 * sharing a grant each keep their own scope and adapt on their own refusals (AIMD converges to a fair
 * share without talking to each other).
 */
import type { Clock } from '../../time/clock.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { checkAimdSettings, DEFAULT_AIMD } from './aimd.js';
import { ScopeLimiter, type ScopeLimiterSettings, type ScopeSnapshot } from './scope-limiter.js';
/** Where the rate limit comes from, and its refusals. */
export type RateLimitMetrics = Pick<
  ConnectorMetrics,
  'apiRateLimitRefusals' | 'apiRateLimitGranted' | 'setRateLimitSource'
>;

export interface RateLimitConfig {
  scope: 'grant' | 'global';
  floorPerSecond: number;
  ceilingPerSecond: number;
  /** See ScopeLimiterSettings.backfillShare. */
  backfillShare: number;
}

/** The scope every request shares under `global`, and the default scope of a request that names none. */
export const GLOBAL_SCOPE = 'global';

export interface ScopeStatus extends ScopeSnapshot {
  scope: string;
}

export class RateLimiters {
  private readonly scopes = new Map<string, ScopeLimiter>();
  private readonly settings: ScopeLimiterSettings;

  constructor(
    private readonly clock: Clock,
    options: {
      requestsPerSecond: number;
      rateLimit: RateLimitConfig;
      retry: { initialDelayMs: number; maxDelayMs: number; maxRetryAfterMs: number };
      metrics?: RateLimitMetrics;
      /** See ScopeLimiterSettings.refuseWhileParked (the connector's scheduler parks the locations). */
      refuseWhileParked?: boolean;
    },
    private readonly metrics: RateLimitMetrics | undefined = options.metrics,
  ) {
    const { rateLimit } = options;
    this.settings = {
      ...DEFAULT_AIMD,
      initialRate: options.requestsPerSecond,
      floor: Math.min(rateLimit.floorPerSecond, options.requestsPerSecond),
      ceiling: Math.max(rateLimit.ceilingPerSecond, options.requestsPerSecond),
      backfillShare: rateLimit.backfillShare,
      parkAfterMs: options.retry.maxRetryAfterMs,
      maxHoldMs: options.retry.maxRetryAfterMs,
      holdBackoffMs: Math.max(1000, options.retry.initialDelayMs),
      maxHoldBackoffMs: Math.max(1000, options.retry.maxDelayMs),
      refuseWhileParked: options.refuseWhileParked === true,
    };
    checkAimdSettings(this.settings);
    this.global = rateLimit.scope === 'global';
    metrics?.setRateLimitSource(() => this.status());
  }

  private readonly global: boolean;

  /** The limiter of a grant (or the global one). */
  scope(grant: string | undefined): ScopeLimiter {
    const name = this.global || grant === undefined ? GLOBAL_SCOPE : grant;
    let limiter = this.scopes.get(name);
    if (limiter === undefined) {
      limiter = new ScopeLimiter(this.clock, this.settings, {
        refused: () => this.metrics?.apiRateLimitRefusals.inc({ scope: name }),
        granted: (priority) => this.metrics?.apiRateLimitGranted.inc({ scope: name, priority }),
      });
      this.scopes.set(name, limiter);
    }
    return limiter;
  }

  /** The name of the scope a grant's requests go to. */
  scopeName(grant: string | undefined): string {
    return this.global || grant === undefined ? GLOBAL_SCOPE : grant;
  }

  /** The limiter of scope `name` if a request has used it yet (no scope is created). */
  existing(name: string): ScopeLimiter | undefined {
    return this.scopes.get(name);
  }

  status(): ScopeStatus[] {
    return [...this.scopes.entries()].map(([scope, limiter]) => ({ scope, ...limiter.snapshot() }));
  }

  close(reason: unknown): void {
    for (const limiter of this.scopes.values()) limiter.close(reason);
  }
}
