/**
 * The calls API's metrics: its requests (duration, retries, time waiting on the connector's own limits, in
 * flight) and the learned rate limits of api/rate-limit/, read from the limiters at scrape time.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'error';

export function statusClass(status: number | undefined): StatusClass {
  if (status === undefined || status < 200 || status >= 600) return 'error';
  return `${Math.floor(status / 100)}xx` as StatusClass;
}

/** What the metrics read of one rate-limit scope at scrape time. */
export interface RateLimitScopeFigures {
  scope: string;
  ratePerSecond: number;
  heldSeconds: number;
  throttled: boolean;
}

/**
 * The API metrics, in `registry`. `rateLimits` is read at scrape time: the limiters register themselves after
 * the metrics exist (ConnectorMetrics.setRateLimitSource).
 */
export function apiMetrics(registry: Registry, rateLimits: () => readonly RateLimitScopeFigures[]) {
  const registers = [registry];
  /** Held seconds already added to calls_connector_api_throttled_seconds_total, per scope. */
  const throttledReported = new Map<string, number>();
  return {
    apiRequestDuration: new Histogram({
      name: 'calls_connector_api_request_duration_seconds',
      help: 'Calls API request duration, by endpoint (list, get_call, token) and status class.',
      labelNames: ['endpoint', 'status_class'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    apiRetries: new Counter({
      name: 'calls_connector_api_retries_total',
      help: 'Calls API requests retried, by endpoint and reason (status code class, network, timeout).',
      labelNames: ['endpoint', 'reason'] as const,
      registers,
    }),
    apiRateLimited: new Counter({
      name: 'calls_connector_api_rate_limited_total',
      help: 'HTTP 429 responses from the calls API.',
      labelNames: ['endpoint'] as const,
      registers,
    }),
    apiRateLimitRefusals: new Counter({
      name: 'calls_connector_api_rate_limit_refusals_total',
      help: 'Requests the calls API refused for rate (429, or 503 with Retry-After), by limiter scope (a grant, or global). Flow control: they are retried without using up api.retry.maxAttempts.',
      labelNames: ['scope'] as const,
      registers,
    }),
    apiRateLimitGranted: new Counter({
      name: 'calls_connector_api_rate_limit_granted_total',
      help: 'Request starts the rate limiter granted, by limiter scope and priority (live: polls of the present and their single calls; backfill: history lanes). Under a budget below the demand, backfill keeps api.rateLimit.backfillShare of the starts while it waits.',
      labelNames: ['scope', 'priority'] as const,
      registers,
    }),
    /** Brought up to date at scrape time from the rate limiters (`rateLimits`): a long hold counts as it goes. */
    apiThrottledSeconds: new Counter({
      name: 'calls_connector_api_throttled_seconds_total',
      help: 'Time a limiter scope was held because the API asked to wait (Retry-After, a backoff after a 429, a quota announced as spent): no request of the scope started meanwhile. Its rate over a window is the share of that window spent held.',
      labelNames: ['scope'] as const,
      registers,
      collect() {
        for (const scope of rateLimits()) {
          const reported = throttledReported.get(scope.scope) ?? 0;
          // inc by 0 too: a scope that was never held still has its series (0), so rate() and the dashboard
          // panel show 0 rather than no data.
          this.inc({ scope: scope.scope }, Math.max(0, scope.heldSeconds - reported));
          if (scope.heldSeconds > reported) throttledReported.set(scope.scope, scope.heldSeconds);
        }
      },
    }),
    /** Set at scrape time from the rate limiters (`rateLimits`). */
    apiRateLimitRate: new Gauge({
      name: 'calls_connector_api_rate_limit_requests_per_second',
      help: 'Request rate a limiter scope allows now, learned from the API (AIMD from api.requestsPerSecond, or just under an announced RateLimit-Policy).',
      labelNames: ['scope'] as const,
      registers,
      collect() {
        for (const scope of rateLimits()) this.set({ scope: scope.scope }, scope.ratePerSecond);
      },
    }),
    /** Set at scrape time from the rate limiters (`rateLimits`). */
    apiThrottled: new Gauge({
      name: 'calls_connector_api_throttled',
      help: 'Whether a limiter scope is parked: held for at least api.retry.maxRetryAfterMs (a long Retry-After, an exhausted quota). Its locations resume by themselves when the hold ends.',
      labelNames: ['scope'] as const,
      registers,
      collect() {
        for (const scope of rateLimits()) this.set({ scope: scope.scope }, scope.throttled ? 1 : 0);
      },
    }),
    apiInFlight: new Gauge({
      name: 'calls_connector_api_requests_in_flight',
      help: 'Calls API requests currently in flight.',
      registers,
    }),
    apiRateLimiterWait: new Histogram({
      name: 'calls_connector_api_rate_limiter_wait_seconds',
      help: "Time a calls API request waited on the connector's own limits (api.requestsPerSecond, api.maxConcurrency) before it was sent; not part of api_request_duration_seconds.",
      labelNames: ['endpoint'] as const,
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
  };
}
