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
 *
 * The metrics are defined by concern in the modules beside this one (api, auth, kafka, ownership, locations
 * and their progress, webhooks, the process); this class composes them into one registry and names each metric as a
 * member, so components keep naming the few they update as a `Pick<ConnectorMetrics, ...>`. A new metric is
 * defined in its concern's module, then named here. Metrics is an adapter (docs/architecture.md "Layers"): it
 * implements the sync core's `SyncMetrics` and reads its backfill figures (in location-progress.ts);
 * the core imports no metrics.
 */
import { Registry } from 'prom-client';
import type { BackfillFigures } from '../sync/lanes/backfill.js';
import { systemClock, type Clock } from '../time/clock.js';
import { apiMetrics, type RateLimitScopeFigures } from './api-metrics.js';
import { authMetrics } from './auth-metrics.js';
import { configurationMetrics } from './configuration-metrics.js';
import { freshnessMetrics } from './freshness-metrics.js';
import { kafkaMetrics } from './kafka-metrics.js';
import { locationMetrics } from './location-metrics.js';
import { LocationProgress } from './location-progress.js';
import { ownershipMetrics } from './ownership-metrics.js';
import { collectNodeProcessMetrics, processMetrics } from './process-metrics.js';
import { signalMetrics } from './signal-metrics.js';
import { webhookMetrics } from './webhook-metrics.js';

export { statusClass, type RateLimitScopeFigures, type StatusClass } from './api-metrics.js';

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
  /**
   * metrics.freshnessObjectiveMs (resolved: never null here), exported as
   * `calls_connector_freshness_objective_seconds` for the freshness alert; absent: the gauge is not set.
   */
  freshnessObjectiveMs?: number;
  /**
   * "Now" of the scrape-time gauges (freshness, lag), of a traversal's success and of a change's commit
   * delay; default the system clock. The runtime passes the clock the sync core runs on.
   */
  clock?: Pick<Clock, 'now'>;
}

export class ConnectorMetrics {
  readonly registry = new Registry();
  readonly perLocationLabels: boolean;
  private rateLimitSource: () => readonly RateLimitScopeFigures[] = () => [];
  /** api.requestsPerSecond, for calls_connector_poll_round_seconds (undefined: the gauge stays 0). */
  private readonly requestsPerSecond: number | undefined;
  private readonly clock: Pick<Clock, 'now'>;

  // ---- What the sync of each location did (location-metrics.ts). ----
  private readonly locations = locationMetrics(this.registry);
  readonly recordsPublished = this.locations.recordsPublished;
  readonly recordsSkipped = this.locations.recordsSkipped;
  readonly recordsBelowWatermark = this.locations.recordsBelowWatermark;
  readonly recordsRedacted = this.locations.recordsRedacted;
  readonly pagesFetched = this.locations.pagesFetched;
  readonly traversalDuration = this.locations.traversalDuration;
  readonly locationErrors = this.locations.locationErrors;
  readonly locationsStopped = this.locations.locationsStopped;
  readonly cursorRestarts = this.locations.cursorRestarts;
  readonly recordsUnenriched = this.locations.recordsUnenriched;

  // ---- Each location's progress, computed at scrape time (location-progress.ts). ----
  private readonly progress = new LocationProgress(
    this.registry,
    (uid) => this.location(uid),
    () => this.clock.now(),
  );
  readonly highWaterTimestamp = this.progress.highWaterTimestamp;
  readonly freshness = this.progress.freshness;
  readonly lastTraversalSuccess = this.progress.lastTraversalSuccess;
  readonly backfillRecords = this.progress.backfillRecords;
  readonly backfillLocations = this.progress.backfillLocations;
  readonly backfillPosition = this.progress.backfillPosition;
  readonly backfillUntil = this.progress.backfillUntil;
  readonly backfillRemaining = this.progress.backfillRemaining;
  readonly backfillEta = this.progress.backfillEta;
  readonly locationLag = this.progress.lag;

  // ---- Freshness: how long committed changes waited, and the objective (freshness-metrics.ts). ----
  private readonly freshnessFigures = freshnessMetrics(this.registry);
  readonly changeCommitDelay = this.freshnessFigures.changeCommitDelay;
  readonly freshnessObjective = this.freshnessFigures.freshnessObjective;

  // ---- The calls API and its rate limits (api-metrics.ts). ----
  private readonly api = apiMetrics(this.registry, () => this.rateLimitSource());
  readonly apiRequestDuration = this.api.apiRequestDuration;
  readonly apiRetries = this.api.apiRetries;
  readonly apiRateLimited = this.api.apiRateLimited;
  readonly apiRateLimitRefusals = this.api.apiRateLimitRefusals;
  readonly apiRateLimitGranted = this.api.apiRateLimitGranted;
  readonly apiThrottledSeconds = this.api.apiThrottledSeconds;
  readonly apiRateLimitRate = this.api.apiRateLimitRate;
  readonly apiThrottled = this.api.apiThrottled;
  readonly apiInFlight = this.api.apiInFlight;
  readonly apiRateLimiterWait = this.api.apiRateLimiterWait;

  // ---- The OAuth grants (auth-metrics.ts). ----
  private readonly auth = authMetrics(this.registry);
  readonly tokenRefreshes = this.auth.tokenRefreshes;
  readonly tokenExpiry = this.auth.tokenExpiry;
  readonly grantValid = this.auth.grantValid;

  // ---- The Kafka sinks (kafka-metrics.ts). ----
  private readonly kafka = kafkaMetrics(this.registry);
  readonly transactions = this.kafka.transactions;
  readonly transactionCommitDuration = this.kafka.transactionCommitDuration;
  readonly producerRecreated = this.kafka.producerRecreated;
  readonly pageRewrites = this.kafka.pageRewrites;
  readonly hangingTransactionsHealed = this.kafka.hangingTransactionsHealed;
  readonly standby = this.kafka.standby;
  readonly deadLetters = this.kafka.deadLetters;
  readonly heartbeats = this.kafka.heartbeats;

  // ---- Which locations this instance owns (ownership-metrics.ts). ----
  private readonly ownership = ownershipMetrics(this.registry);
  readonly instanceWriter = this.ownership.instanceWriter;
  readonly ownedLocations = this.ownership.ownedLocations;
  readonly ownedPartitions = this.ownership.ownedPartitions;
  readonly rebalances = this.ownership.rebalances;
  readonly unownedLocations = this.ownership.unownedLocations;
  readonly locationHandover = this.ownership.locationHandover;
  readonly partitionsTakenOver = this.ownership.partitionsTakenOver;

  // ---- The webhook receiver (webhook-metrics.ts). ----
  private readonly webhooks = webhookMetrics(this.registry);
  readonly webhookDeliveries = this.webhooks.webhookDeliveries;
  readonly webhookConnectionsRefused = this.webhooks.webhookConnectionsRefused;
  readonly webhookNudges = this.webhooks.webhookNudges;
  readonly webhookNudgeOutcomes = this.webhooks.webhookNudgeOutcomes;
  readonly webhookNudgeToPublished = this.webhooks.webhookNudgeToPublished;
  readonly webhookMissedDeliveries = this.webhooks.webhookMissedDeliveries;

  // ---- The running configuration and its reloads (configuration-metrics.ts). ----
  private readonly configuration = configurationMetrics(this.registry);
  readonly configurationInfo = this.configuration.configurationInfo;
  readonly configurationReloads = this.configuration.configurationReloads;
  readonly configurationPeers = this.configuration.configurationPeers;

  // ---- Signals (signal-metrics.ts). ----
  private readonly signals = signalMetrics(this.registry);
  readonly signalOutcomes = this.signals.signalOutcomes;
  readonly pausedLocations = this.signals.pausedLocations;
  readonly signalsRunning = this.signals.signalsRunning;

  // ---- The process as a whole (process-metrics.ts). ----
  private readonly processWide = processMetrics(this.registry, {
    requestsPerSecond: () => this.requestsPerSecond,
    ownedLocations: this.ownership.ownedLocations,
  });
  readonly pollInterval = this.processWide.pollInterval;
  readonly pollRound = this.processWide.pollRound;
  /** The interval the scheduler polls at now, as last set (seconds); null before the scheduler set it. */
  private effectiveIntervalSeconds: number | null = null;
  /** The gauge, remembering the value set so that /status can show it (effectiveIntervalMs). */
  readonly pollEffectiveInterval = {
    set: (seconds: number): void => {
      this.effectiveIntervalSeconds = seconds;
      this.processWide.pollEffectiveInterval.set(seconds);
    },
    get: () => this.processWide.pollEffectiveInterval.get(),
  };
  readonly buildInfo = this.processWide.buildInfo;
  readonly readinessCheck = this.processWide.readinessCheck;

  constructor(options: MetricsOptions = {}) {
    this.perLocationLabels = options.perLocationLabels ?? true;
    this.requestsPerSecond = options.requestsPerSecond;
    this.clock = options.clock ?? systemClock;
    if (options.pollIntervalMs !== undefined) {
      this.pollInterval.set(options.pollIntervalMs / 1000);
      this.pollEffectiveInterval.set(options.pollIntervalMs / 1000);
    }
    if (options.freshnessObjectiveMs !== undefined)
      this.freshnessObjective.set(options.freshnessObjectiveMs / 1000);
    this.buildInfo.set(
      { version: options.version ?? 'unknown', connector: options.connector ?? 'unknown' },
      1,
    );
    if (options.processMetrics ?? false) collectNodeProcessMetrics(this.registry);
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
    this.progress.observeHighWater(locationUid, updatedAt);
  }

  /** The interval each location is polled at now (ms), as the scheduler last set it; null before it did. */
  effectiveIntervalMs(): number | null {
    return this.effectiveIntervalSeconds === null ? null : this.effectiveIntervalSeconds * 1000;
  }

  /**
   * Called by the sync engine once a page is stored, with the `updatedAt` (ms) of each call it published and
   * its lane: drives `changeCommitDelay` (now minus each updatedAt, never below 0: an API clock ahead of ours
   * is not a negative wait).
   */
  observeCommittedChanges(lane: 'live' | 'history', updatedAtMs: readonly number[]): void {
    if (updatedAtMs.length === 0) return;
    const now = this.clock.now();
    const histogram = this.changeCommitDelay.labels({ lane });
    for (const at of updatedAtMs) histogram.observe(Math.max(0, (now - at) / 1000));
  }

  /**
   * Called by the sync engine when a live poll of a location that began at `startedAt` completed: drives the
   * scrape-time `locationLag`.
   */
  observeCaughtUp(locationUid: string, startedAt: Date | number): void {
    this.progress.observeCaughtUp(locationUid, startedAt);
  }

  /** Called by the sync engine when a location's backfill moves, with null when its lanes merged. */
  observeBackfill(locationUid: string, figures: BackfillFigures | null): void {
    this.progress.observeBackfill(locationUid, figures);
  }

  /** Called by the sync engine when a traversal of a location completes (nextCursor null). */
  observeTraversalSuccess(locationUid: string, at: Date | number = this.clock.now()): void {
    this.progress.observeTraversalSuccess(locationUid, at);
  }

  /**
   * Distributed mode: locations this instance no longer owns leave the per-location watermark, freshness, lag
   * and last-success gauges (their new owner reports them; left here, their freshness would grow and page someone).
   */
  forgetLocations(locationUids: Iterable<string>): void {
    this.progress.forgetLocations(locationUids);
  }
}
