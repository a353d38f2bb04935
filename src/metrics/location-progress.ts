/**
 * The progress of each location, as gauges computed at scrape time from the figures the sync reported: its
 * watermark and freshness, its last completed traversal, its lag (since its last completed live poll began), and the backfill of a split location (its history lane).
 * Freshness and a backfill's ETA depend on "now", and setting a gauge per location on every page would cost a
 * pass over every location: the figures are kept here per location uid and published when scraped, per
 * `location` label (the oldest, or the sum, of the locations sharing one).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { backfillProgress, type BackfillFigures } from '../sync/lanes/backfill.js';

export class LocationProgress {
  /** Per location uid: highest published updatedAt (ms). Kept here so freshness is computed at scrape time. */
  private readonly highWaterMs = new Map<string, number>();
  /** Per location uid: time (ms) of the last completed traversal. */
  private readonly lastSuccessMs = new Map<string, number>();
  /**
   * Per location uid: when its last completed live poll began (ms). Every change made before it is in Kafka;
   * one made since waits for the next poll (observeCaughtUp).
   */
  private readonly caughtUpMs = new Map<string, number>();
  /**
   * Per location uid: its backfill (a split location's history lane) as last reported; once
   * the lanes merged (`done`), its gauges stay at "read up to T0, nothing left" until the location is forgotten.
   */
  private readonly backfills = new Map<string, BackfillFigures & { done?: boolean }>();

  /** Set at scrape time from `highWaterMs`: an update per page would cost a pass over every location. */
  readonly highWaterTimestamp: Gauge<'location'>;
  /**
   * Recomputed on every scrape from the watermarks given to `observeHighWater`, so it keeps growing while
   * a location is stuck (a value set once at publish time would freeze). A direct `set()` is still
   * honoured for locations that never went through `observeHighWater`.
   */
  readonly freshness: Gauge<'location'>;
  /** Set at scrape time from `lastSuccessMs` (see highWaterTimestamp). */
  readonly lastTraversalSuccess: Gauge<'location'>;
  /** Now minus `caughtUpMs`, at scrape time: how long a change made now could have waited already. */
  readonly lag: Gauge<'location'>;
  readonly backfillRecords: Counter<'location'>;
  readonly backfillLocations: Gauge;
  /** Scrape-time gauges of the backfills: see `publishBackfills`. */
  readonly backfillPosition: Gauge<'location'>;
  readonly backfillUntil: Gauge<'location'>;
  readonly backfillRemaining: Gauge<'location'>;
  readonly backfillEta: Gauge<'location'>;

  /**
   * @param label the `location` label value of a location uid (ConnectorMetrics.location)
   * @param now "now" of the scrape-time gauges
   */
  constructor(
    private readonly registry: Registry,
    private readonly label: (locationUid: string) => string,
    private readonly now: () => number,
  ) {
    const registers = [registry];
    this.highWaterTimestamp = new Gauge({
      name: 'calls_connector_location_high_water_timestamp_seconds',
      help: 'Highest updatedAt published for a location (its watermark), as Unix time. With per-location labels off, the oldest of all locations.',
      labelNames: ['location'] as const,
      registers,
      collect: () => {
        this.publishOldest(this.highWaterMs, this.highWaterTimestamp);
      },
    });
    this.freshness = new Gauge({
      name: 'calls_connector_location_freshness_seconds',
      help: 'Now minus the highest updatedAt published for a location (its high-water mark). With per-location labels off, the stalest location.',
      labelNames: ['location'] as const,
      registers,
      collect: () => {
        this.publishAge(this.highWaterMs, this.freshness);
      },
    });
    this.lastTraversalSuccess = new Gauge({
      name: 'calls_connector_location_last_success_timestamp_seconds',
      help: 'Unix time at which a location last completed a traversal (nextCursor exhausted). With per-location labels off, the least recent location.',
      labelNames: ['location'] as const,
      registers,
      collect: () => {
        this.publishOldest(this.lastSuccessMs, this.lastTraversalSuccess);
      },
    });
    this.lag = new Gauge({
      name: 'calls_connector_location_lag_seconds',
      help: "Now minus the start of the location's last completed live poll: every change made before that start is committed to Kafka, so no unpublished change is older than this. About the poll interval plus one traversal when healthy; unlike freshness_seconds it does not grow while a location is quiet. With per-location labels off, the largest.",
      labelNames: ['location'] as const,
      registers,
      collect: () => {
        this.publishAge(this.caughtUpMs, this.lag);
      },
    });
    this.backfillRecords = new Counter({
      name: 'calls_connector_backfill_records_total',
      help: 'Call records committed by history lanes (a location split to read its history behind the present, docs/sync.md "Lanes"); also counted in records_published_total.',
      labelNames: ['location'] as const,
      registers,
    });
    this.backfillLocations = new Gauge({
      name: 'calls_connector_backfill_locations',
      help: 'Locations split into a live lane and a history lane still reading up to T0.',
      registers,
      collect: () => {
        this.backfillLocations.set([...this.backfills.values()].filter((b) => b.done !== true).length);
      },
    });
    this.backfillPosition = this.backfillGauge({
      name: 'calls_connector_backfill_position_timestamp_seconds',
      help: "A history lane's position (its watermark, else its since) as Unix time. With per-location labels off, the oldest.",
    });
    this.backfillUntil = this.backfillGauge({
      name: 'calls_connector_backfill_until_timestamp_seconds',
      help: 'T0 of a split location (its history lane reads up to it) as Unix time. With per-location labels off, the oldest.',
    });
    this.backfillRemaining = this.backfillGauge({
      name: 'calls_connector_backfill_remaining_seconds',
      help: 'API time a history lane has left to read (T0 minus its position). With per-location labels off, the sum.',
    });
    this.backfillEta = this.backfillGauge({
      name: 'calls_connector_backfill_eta_seconds',
      help: 'Time a history lane needs to reach T0 at the rate it has read so far (the budget the live lanes left it). With per-location labels off, the longest.',
    });
  }

  /** A live poll of the location that began at `startedAt` completed (ConnectorMetrics.observeCaughtUp). */
  observeCaughtUp(locationUid: string, startedAt: Date | number): void {
    this.caughtUpMs.set(locationUid, toMs(startedAt));
  }

  /** A location's new watermark (ConnectorMetrics.observeHighWater). */
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

  /** A location's backfill as it moved, null once its lanes merged (ConnectorMetrics.observeBackfill). */
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
    const now = this.now();
    const min = (a: number | undefined, b: number) => (a === undefined ? b : Math.min(a, b));
    const byLabel = new Map<
      string,
      { position?: number; until?: number; remaining?: number; eta?: number }
    >();
    for (const [uid, figures] of this.backfills) {
      const label = this.label(uid);
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

  /** A location's traversal completed at `at` (ConnectorMetrics.observeTraversalSuccess). */
  observeTraversalSuccess(locationUid: string, at: Date | number): void {
    this.lastSuccessMs.set(locationUid, toMs(at));
  }

  /** Drops the figures of locations this instance no longer owns (ConnectorMetrics.forgetLocations). */
  forgetLocations(locationUids: Iterable<string>): void {
    for (const uid of locationUids) {
      this.highWaterMs.delete(uid);
      this.lastSuccessMs.delete(uid);
      this.caughtUpMs.delete(uid);
      this.backfills.delete(uid);
    }
    for (const gauge of [this.highWaterTimestamp, this.lastTraversalSuccess, this.freshness, this.lag])
      gauge.reset();
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
      const label = this.label(uid);
      const current = oldest.get(label);
      if (current === undefined || ms < current) oldest.set(label, ms);
    }
    return oldest;
  }

  /** Per label value, now minus the oldest timestamp (seconds, never below 0): freshness and lag. */
  private publishAge(byLocation: ReadonlyMap<string, number>, gauge: Gauge<'location'>): void {
    const now = this.now();
    for (const [label, ms] of this.oldestByLabel(byLocation))
      gauge.set({ location: label }, Math.max(0, (now - ms) / 1000));
  }

  private publishOldest(byLocation: ReadonlyMap<string, number>, gauge: Gauge<'location'>): void {
    for (const [label, ms] of this.oldestByLabel(byLocation)) gauge.set({ location: label }, ms / 1000);
  }
}

function toMs(value: Date | number): number {
  return typeof value === 'number' ? value : value.getTime();
}
