/**
 * Every Prometheus metric the connector exposes, defined once (prom-client).
 *
 * Naming follows Prometheus conventions: `calls_connector_` prefix, base units (seconds, bytes),
 * `_total` on counters. Label values are bounded: endpoint names, status classes, result words,
 * reasons, error codes. The only unbounded label is `location`, and it can be turned off
 * (`metrics.perLocationLabels: false`), in which case it is always the value "all".
 *
 * Contract: one `ConnectorMetrics` per process (or per test), each with its own Registry, so tests
 * never share counters. Components receive it injected; none of them creates metrics of its own.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { backfillProgress, type BackfillFigures } from '../sync/backfill.js';
import { systemClock, type Clock } from '../time/clock.js';

export interface MetricsOptions {
  perLocationLabels?: boolean;
  /** Node process metrics (heap, event loop lag, GC, fds); off in unit tests to keep them quiet. */
  processMetrics?: boolean;
  /** poll.intervalMs, exported as `calls_connector_poll_interval_seconds` for the staleness alert. */
  pollIntervalMs?: number;
  /** api.requestsPerSecond: with the owned locations, the shortest round of polls (`calls_connector_poll_round_seconds`). */
  requestsPerSecond?: number;
  /** Labels of `calls_connector_build_info`; 'unknown' when not given. */
  version?: string;
  connector?: string;
  /** "Now" of the scrape-time gauges (freshness) and of a traversal's success; default the system clock. */
  clock?: Pick<Clock, 'now'>;
}

/**
 * prom-client's default metrics include three gauges named `*_total`, which breaks the Prometheus rule
 * that only counters end in `_total` (promtool flags them). Their values are the sums of the
 * per-type gauges without the suffix (`nodejs_active_handles{type}` etc.), so nothing is lost.
 */
const MISNAMED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

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

export class ConnectorMetrics {
  readonly registry = new Registry();
  readonly perLocationLabels: boolean;
  private rateLimitSource: () => readonly RateLimitScopeFigures[] = () => [];
  /** Held seconds already added to calls_connector_api_throttled_seconds_total, per scope. */
  private readonly throttledReported = new Map<string, number>();
  /** api.requestsPerSecond, for calls_connector_poll_round_seconds (undefined: the gauge stays 0). */
  private readonly requestsPerSecond: number | undefined;
  private readonly clock: Pick<Clock, 'now'>;

  readonly recordsPublished = new Counter({
    name: 'calls_connector_records_published_total',
    help: 'Call records committed to the calls topic.',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly recordsSkipped = new Counter({
    name: 'calls_connector_records_skipped_total',
    help: 'Listed calls not published, by reason: boundary_dedupe (already published at the since boundary), dlq (sent to the dead-letter topic). Redacted records are published: see records_redacted_total.',
    labelNames: ['location', 'reason'] as const,
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'calls_connector_dead_letters_total',
    help: 'Items written to the dead-letter topic, by error code.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly recordsBelowWatermark = new Counter({
    name: 'calls_connector_records_below_watermark_total',
    help: "Listed records older than their location's watermark (the API broke its updatedAt order): published again rather than risk losing them.",
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly pagesFetched = new Counter({
    name: 'calls_connector_pages_fetched_total',
    help: 'Listing pages fetched.',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly apiRequestDuration = new Histogram({
    name: 'calls_connector_api_request_duration_seconds',
    help: 'Calls API request duration, by endpoint (list, get_call, token) and status class.',
    labelNames: ['endpoint', 'status_class'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly apiRetries = new Counter({
    name: 'calls_connector_api_retries_total',
    help: 'Calls API requests retried, by endpoint and reason (status code class, network, timeout).',
    labelNames: ['endpoint', 'reason'] as const,
    registers: [this.registry],
  });
  readonly apiRateLimited = new Counter({
    name: 'calls_connector_api_rate_limited_total',
    help: 'HTTP 429 responses from the calls API.',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });
  readonly apiRateLimitRefusals = new Counter({
    name: 'calls_connector_api_rate_limit_refusals_total',
    help: 'Requests the calls API refused for rate (429, or 503 with Retry-After), by limiter scope (a grant, or global). Flow control: they are retried without using up api.retry.maxAttempts.',
    labelNames: ['scope'] as const,
    registers: [this.registry],
  });
  /** Brought up to date at scrape time from the rate limiters (setRateLimitSource): a long hold counts as it goes. */
  readonly apiThrottledSeconds = new Counter({
    name: 'calls_connector_api_throttled_seconds_total',
    help: 'Time a limiter scope was held because the API asked to wait (Retry-After, a backoff after a 429, a quota announced as spent): no request of the scope started meanwhile. Its rate over a window is the share of that window spent held.',
    labelNames: ['scope'] as const,
    registers: [this.registry],
    collect: () => {
      for (const scope of this.rateLimitSource()) {
        const reported = this.throttledReported.get(scope.scope) ?? 0;
        // inc by 0 too: a scope that was never held still has its series (0), so rate() and the dashboard
        // panel show 0 rather than no data.
        this.apiThrottledSeconds.inc({ scope: scope.scope }, Math.max(0, scope.heldSeconds - reported));
        if (scope.heldSeconds > reported) this.throttledReported.set(scope.scope, scope.heldSeconds);
      }
    },
  });
  /** Set at scrape time from the rate limiters (setRateLimitSource). */
  readonly apiRateLimitRate = new Gauge({
    name: 'calls_connector_api_rate_limit_requests_per_second',
    help: 'Request rate a limiter scope allows now, learned from the API (AIMD from api.requestsPerSecond, or just under an announced RateLimit-Policy).',
    labelNames: ['scope'] as const,
    registers: [this.registry],
    collect: () => {
      for (const scope of this.rateLimitSource())
        this.apiRateLimitRate.set({ scope: scope.scope }, scope.ratePerSecond);
    },
  });
  /** Set at scrape time from the rate limiters (setRateLimitSource). */
  readonly apiThrottled = new Gauge({
    name: 'calls_connector_api_throttled',
    help: 'Whether a limiter scope is parked: held longer than api.retry.maxRetryAfterMs (a long Retry-After, an exhausted quota). Its locations resume by themselves when the hold ends.',
    labelNames: ['scope'] as const,
    registers: [this.registry],
    collect: () => {
      for (const scope of this.rateLimitSource())
        this.apiThrottled.set({ scope: scope.scope }, scope.throttled ? 1 : 0);
    },
  });
  readonly apiInFlight = new Gauge({
    name: 'calls_connector_api_requests_in_flight',
    help: 'Calls API requests currently in flight.',
    registers: [this.registry],
  });
  readonly tokenRefreshes = new Counter({
    name: 'calls_connector_token_refreshes_total',
    help: 'OAuth token refreshes, by result (success, failure, revoked).',
    labelNames: ['grant', 'result'] as const,
    registers: [this.registry],
  });
  readonly tokenExpiry = new Gauge({
    name: 'calls_connector_token_expiry_timestamp_seconds',
    help: 'Unix time at which the current access token of a grant expires.',
    labelNames: ['grant'] as const,
    registers: [this.registry],
  });
  readonly grantValid = new Gauge({
    name: 'calls_connector_grant_valid',
    help: '1 while a grant can obtain tokens, 0 once its refresh was refused (run `auth login` again).',
    labelNames: ['grant'] as const,
    registers: [this.registry],
  });
  readonly transactions = new Counter({
    name: 'calls_connector_kafka_transactions_total',
    help: 'Kafka transactions, by result (commit, abort).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly producerRecreated = new Counter({
    name: 'calls_connector_kafka_producer_recreated_total',
    help: 'Producers discarded after a fenced or stuck transaction, by error code; a new one is built only when the sink may initialise its transactional id again (otherwise it stands by).',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly pageRewrites = new Counter({
    name: 'calls_connector_kafka_page_rewrites_total',
    help: 'Committed pages written again in part: a commit of unknown outcome whose calls are visible while Kafka lost part of it since (an operator aborted a hanging transaction): its offset record, and its records on the aborted partitions, go again. Each is a page not published twice.',
    registers: [this.registry],
  });
  readonly standby = new Gauge({
    name: 'calls_connector_standby',
    help: '1 while this instance stands by because a newer instance with the same connector.name took over its transactional id (it writes nothing); 0 otherwise.',
    registers: [this.registry],
  });

  // ---- issue 14: several instances share the locations (connector.mode: distributed) ----
  readonly ownedLocations = new Gauge({
    name: 'calls_connector_owned_locations',
    help: 'Configured locations this instance owns and polls: those whose offsets-topic partition it is assigned (all of them in single mode).',
    registers: [this.registry],
  });
  readonly ownedPartitions = new Gauge({
    name: 'calls_connector_owned_partitions',
    help: 'Offsets-topic partitions this instance owns (distributed mode: its group assignment; single mode: all).',
    registers: [this.registry],
  });
  readonly rebalances = new Counter({
    name: 'calls_connector_rebalances_total',
    help: 'Assignments this instance received from the instances group (one per completed rebalance it took part in).',
    registers: [this.registry],
  });
  readonly unownedLocations = new Gauge({
    name: 'calls_connector_unowned_locations',
    help: 'Configured locations whose offsets-topic partition no live member of the instances group owns, as this instance sees the group (0 in single mode). Take the max over instances.',
    registers: [this.registry],
  });
  readonly locationHandover = new Histogram({
    name: 'calls_connector_location_handover_seconds',
    help: "Per partition taken over: from the moment it lost its previous owner (or the rebalance began, as this instance saw it) to its locations being handed to this instance's scheduler, due at once.",
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly partitionsTakenOver = new Counter({
    name: 'calls_connector_partitions_taken_over_total',
    help: 'Partitions this instance dropped because another instance fenced its transactional producer (it had lost them in a rebalance it had not seen yet).',
    registers: [this.registry],
  });

  /** Per location uid: highest published updatedAt (ms). Kept here so freshness is computed at scrape time. */
  private readonly highWaterMs = new Map<string, number>();
  /** Per location uid: time (ms) of the last completed traversal. */
  private readonly lastSuccessMs = new Map<string, number>();

  /** Set at scrape time from `highWaterMs`: an update per page would cost a pass over every location. */
  readonly highWaterTimestamp = new Gauge({
    name: 'calls_connector_location_high_water_timestamp_seconds',
    help: 'Highest updatedAt published for a location (its watermark), as Unix time. With per-location labels off, the oldest of all locations.',
    labelNames: ['location'] as const,
    registers: [this.registry],
    collect: () => {
      this.publishOldest(this.highWaterMs, this.highWaterTimestamp);
    },
  });
  /**
   * Recomputed on every scrape from the watermarks given to `observeHighWater`, so it keeps growing while
   * a location is stuck (a value set once at publish time would freeze). A direct `set()` is still
   * honoured for locations that never went through `observeHighWater`.
   */
  readonly freshness = new Gauge({
    name: 'calls_connector_location_freshness_seconds',
    help: 'Now minus the highest updatedAt published for a location (its high-water mark). With per-location labels off, the stalest location.',
    labelNames: ['location'] as const,
    registers: [this.registry],
    collect: () => {
      const now = this.clock.now();
      for (const [label, highWater] of this.oldestByLabel(this.highWaterMs)) {
        this.freshness.set({ location: label }, Math.max(0, (now - highWater) / 1000));
      }
    },
  });
  /** Set at scrape time from `lastSuccessMs` (see highWaterTimestamp). */
  readonly lastTraversalSuccess = new Gauge({
    name: 'calls_connector_location_last_success_timestamp_seconds',
    help: 'Unix time at which a location last completed a traversal (nextCursor exhausted). With per-location labels off, the least recent location.',
    labelNames: ['location'] as const,
    registers: [this.registry],
    collect: () => {
      this.publishOldest(this.lastSuccessMs, this.lastTraversalSuccess);
    },
  });
  /**
   * Per location uid: its backfill (a split location's history lane, sync/lanes.ts) as last reported; once
   * the lanes merged (`done`), its gauges stay at "read up to T0, nothing left" until the location is forgotten.
   */
  private readonly backfills = new Map<string, BackfillFigures & { done?: boolean }>();
  readonly backfillRecords = new Counter({
    name: 'calls_connector_backfill_records_total',
    help: 'Call records committed by history lanes (a location split to read its history behind the present, docs/sync.md "Lanes"); also counted in records_published_total.',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly backfillLocations = new Gauge({
    name: 'calls_connector_backfill_locations',
    help: 'Locations split into a live lane and a history lane still reading up to T0.',
    registers: [this.registry],
    collect: () => {
      this.backfillLocations.set([...this.backfills.values()].filter((b) => b.done !== true).length);
    },
  });
  /** Scrape-time gauges of the backfills: see `publishBackfills`. */
  readonly backfillPosition = this.backfillGauge({
    name: 'calls_connector_backfill_position_timestamp_seconds',
    help: "A history lane's position (its watermark, else its since) as Unix time. With per-location labels off, the oldest.",
  });
  readonly backfillUntil = this.backfillGauge({
    name: 'calls_connector_backfill_until_timestamp_seconds',
    help: 'T0 of a split location (its history lane reads up to it) as Unix time. With per-location labels off, the oldest.',
  });
  readonly backfillRemaining = this.backfillGauge({
    name: 'calls_connector_backfill_remaining_seconds',
    help: 'API time a history lane has left to read (T0 minus its position). With per-location labels off, the sum.',
  });
  readonly backfillEta = this.backfillGauge({
    name: 'calls_connector_backfill_eta_seconds',
    help: 'Time a history lane needs to reach T0 at the rate it has read so far (the budget the live lanes left it). With per-location labels off, the longest.',
  });
  readonly traversalDuration = new Histogram({
    name: 'calls_connector_traversal_duration_seconds',
    help: 'Duration of one complete traversal of a location, first page to null nextCursor.',
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly locationErrors = new Counter({
    name: 'calls_connector_location_errors_total',
    help: 'Traversals that ended in an error, by error code.',
    labelNames: ['location', 'code'] as const,
    registers: [this.registry],
  });
  readonly locationsStopped = new Gauge({
    name: 'calls_connector_locations_stopped',
    help: 'Locations stopped by a fatal error (403, cursor loop, revoked grant, ...), by error code; retried with backoff until a page succeeds (see docs/sync.md).',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly pollInterval = new Gauge({
    name: 'calls_connector_poll_interval_seconds',
    help: 'Configured pause between traversals of a location (poll.intervalMs); alerts judge staleness against it.',
    registers: [this.registry],
  });
  /**
   * Computed at scrape time from the owned locations, so that it follows a distributed instance's assignment.
   * Stays 0 without api.requestsPerSecond (tests).
   */
  readonly pollRound = new Gauge({
    name: 'calls_connector_poll_round_seconds',
    help: 'Shortest time one round of polls of the locations this instance owns can take under api.requestsPerSecond (owned locations / rate). Above calls_connector_poll_interval_seconds, each location is polled once per round, not once per interval; the staleness alert judges against the larger of the two.',
    registers: [this.registry],
    collect: async () => {
      if (this.requestsPerSecond === undefined) return;
      const owned = (await this.ownedLocations.get()).values[0]?.value ?? 0;
      this.pollRound.set(owned / this.requestsPerSecond);
    },
  });
  readonly buildInfo = new Gauge({
    name: 'calls_connector_build_info',
    help: 'Always 1; labels carry the connector version and its configured name.',
    labelNames: ['version', 'connector'] as const,
    registers: [this.registry],
  });

  // Self-healing of the traversal and enrichment (issue 9: rejected cursors, unenriched calls).
  readonly cursorRestarts = new Counter({
    name: 'calls_connector_cursor_restarts_total',
    help: 'Traversals restarted from the watermark because the listing rejected the cursor sent, by reason: invalid_cursor (named by api.invalidCursorStatuses / api.invalidCursorErrorCodes), rejected_4xx (any other 4xx but 401/403/429).',
    labelNames: ['location', 'reason'] as const,
    registers: [this.registry],
  });
  readonly recordsUnenriched = new Counter({
    name: 'calls_connector_records_unenriched_total',
    help: 'Calls published without enrichment (customer number redacted) although enrichment is on, by reason: gone (404/410), refused (another 4xx), invalid (fields the schema rejects, or a body over api.maxResponseBytes), version_mismatch (the single call has another updatedAt than listed).',
    labelNames: ['location', 'reason'] as const,
    registers: [this.registry],
  });

  // ---- issue 13: metrics that tell the truth ----
  readonly apiRateLimiterWait = new Histogram({
    name: 'calls_connector_api_rate_limiter_wait_seconds',
    help: "Time a calls API request waited on the connector's own limits (api.requestsPerSecond, api.maxConcurrency) before it was sent; not part of api_request_duration_seconds.",
    labelNames: ['endpoint'] as const,
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly transactionCommitDuration = new Histogram({
    name: 'calls_connector_kafka_transaction_commit_duration_seconds',
    help: 'Time one Kafka transaction commit took (a group of up to maxPagesPerTransaction pages; the commit call only, records already sent).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly readinessCheck = new Gauge({
    name: 'calls_connector_readiness_check',
    help: '1 when a readiness check passed at its last evaluation (/readyz), 0 when it failed; by check name.',
    labelNames: ['check'] as const,
    registers: [this.registry],
  });
  readonly recordsRedacted = new Counter({
    name: 'calls_connector_records_redacted_total',
    help: 'Call records published with customerPhoneNumber removed by the privacy policy (they are in the calls topic).',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });
  readonly heartbeats = new Counter({
    name: 'calls_connector_heartbeats_total',
    help: 'Heartbeat records written to the heartbeat topic (heartbeat.intervalMs), by location.',
    labelNames: ['location'] as const,
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    this.perLocationLabels = options.perLocationLabels ?? true;
    this.requestsPerSecond = options.requestsPerSecond;
    this.clock = options.clock ?? systemClock;
    if (options.pollIntervalMs !== undefined) this.pollInterval.set(options.pollIntervalMs / 1000);
    this.buildInfo.set(
      { version: options.version ?? 'unknown', connector: options.connector ?? 'unknown' },
      1,
    );
    if (options.processMetrics ?? false) {
      // No prefix: the stock Node.js dashboards and alerts query process_* and nodejs_* by their usual names.
      collectDefaultMetrics({ register: this.registry });
      for (const name of MISNAMED_DEFAULT_METRICS) this.registry.removeSingleMetric(name);
    }
  }

  /** The rate limiters' scopes, read at scrape time (api/rate-limit/registry.ts registers itself). */
  setRateLimitSource(source: () => readonly RateLimitScopeFigures[]): void {
    this.rateLimitSource = source;
  }

  /** The `location` label value for a location uid, honouring `perLocationLabels`. */
  location(locationUid: string): string {
    return this.perLocationLabels ? locationUid : 'all';
  }

  /**
   * Called by the sync engine after a page commits, with the new watermark of that location. Drives
   * `highWaterTimestamp` and the scrape-time `freshness`.
   */
  observeHighWater(locationUid: string, updatedAt: Date | number): void {
    this.highWaterMs.set(locationUid, toMs(updatedAt));
  }

  /**
   * One of the four backfill gauges, per location. Each publishes all four when collected (publishBackfills),
   * so that any one read alone is current; a scrape sets them four times.
   */
  private backfillGauge(metric: { name: string; help: string }): Gauge<'location'> {
    return new Gauge({
      ...metric,
      labelNames: ['location'] as const,
      registers: [this.registry],
      collect: () => {
        this.publishBackfills();
      },
    });
  }

  /** Called by the sync engine when a location's backfill moves, with null when its lanes merged. */
  observeBackfill(locationUid: string, figures: BackfillFigures | null): void {
    if (figures !== null) {
      this.backfills.set(locationUid, figures);
      return;
    }
    const last = this.backfills.get(locationUid);
    if (last !== undefined)
      this.backfills.set(locationUid, { ...last, positionMs: last.untilMs, done: true });
  }

  /**
   * Sets the backfill gauges at scrape time from the figures the locations reported (the ETA depends on
   * "now"), per `location` label: the oldest position and T0, the sum of the time left, the longest ETA.
   */
  private publishBackfills(): void {
    for (const gauge of [this.backfillPosition, this.backfillUntil, this.backfillRemaining, this.backfillEta])
      gauge.reset();
    const now = this.clock.now();
    const min = (a: number | undefined, b: number) => (a === undefined ? b : Math.min(a, b));
    const byLabel = new Map<
      string,
      { position?: number; until?: number; remaining?: number; eta?: number }
    >();
    for (const [uid, figures] of this.backfills) {
      const label = this.location(uid);
      const entry = byLabel.get(label) ?? {};
      const progress =
        figures.done === true
          ? { remainingSeconds: 0, rate: null, etaSeconds: 0 }
          : backfillProgress(figures, now);
      entry.until = min(entry.until, figures.untilMs / 1000);
      if (figures.positionMs !== null) entry.position = min(entry.position, figures.positionMs / 1000);
      if (progress.remainingSeconds !== null)
        entry.remaining = (entry.remaining ?? 0) + progress.remainingSeconds;
      if (progress.etaSeconds !== null) entry.eta = Math.max(entry.eta ?? 0, progress.etaSeconds);
      byLabel.set(label, entry);
    }
    for (const [location, entry] of byLabel) {
      if (entry.until !== undefined) this.backfillUntil.set({ location }, entry.until);
      if (entry.position !== undefined) this.backfillPosition.set({ location }, entry.position);
      if (entry.remaining !== undefined) this.backfillRemaining.set({ location }, entry.remaining);
      if (entry.eta !== undefined) this.backfillEta.set({ location }, entry.eta);
    }
  }

  /** Called by the sync engine when a traversal of a location completes (nextCursor null). */
  observeTraversalSuccess(locationUid: string, at: Date | number = this.clock.now()): void {
    this.lastSuccessMs.set(locationUid, toMs(at));
  }

  /**
   * Distributed mode: locations this instance no longer owns leave the per-location watermark, freshness and
   * last-success gauges (their new owner reports them; left here, their freshness would grow and page someone).
   */
  forgetLocations(locationUids: Iterable<string>): void {
    for (const uid of locationUids) {
      this.highWaterMs.delete(uid);
      this.lastSuccessMs.delete(uid);
      this.backfills.delete(uid);
    }
    for (const gauge of [this.highWaterTimestamp, this.lastTraversalSuccess, this.freshness]) gauge.reset();
    this.publishOldest(this.highWaterMs, this.highWaterTimestamp);
    this.publishOldest(this.lastSuccessMs, this.lastTraversalSuccess);
  }

  /**
   * Per label value, the oldest timestamp among the locations sharing it. With per-location labels off
   * every location shares "all", and the oldest is the one an operator must hear about.
   */
  private oldestByLabel(byLocation: ReadonlyMap<string, number>): Map<string, number> {
    const oldest = new Map<string, number>();
    for (const [uid, ms] of byLocation) {
      const label = this.location(uid);
      const current = oldest.get(label);
      if (current === undefined || ms < current) oldest.set(label, ms);
    }
    return oldest;
  }

  private publishOldest(byLocation: ReadonlyMap<string, number>, gauge: Gauge<'location'>): void {
    for (const [label, ms] of this.oldestByLabel(byLocation)) gauge.set({ location: label }, ms / 1000);
  }
}

function toMs(value: Date | number): number {
  return typeof value === 'number' ? value : value.getTime();
}
