/**
 * The small interfaces the sync engine depends on. The runtime's start-up steps (runtime/steps/) wire the real
 * implementations (Kafka, OAuth);
 * tests may wire others. The per-location orchestrator sequences them; a sink may read the offsets it
 * writes (to learn what a failed commit left, see RecordSink).
 */
import { RetriableError } from '../errors/index.js';
import type { BackfillFigures } from './lanes/backfill.js';
import type { Call, DeadLetter, LocationOffset, MappedItem, RequestHint, SingleCall } from './model.js';
import type { PageRequest } from './location/traversal.js';

export type { RequestHint } from './model.js';
export type { PageRequest } from './location/traversal.js';

/** One page of the listing, its items mapped by the API adapter, in the API's order. */
export interface ListedPage {
  items: readonly MappedItem[];
  /** null: the traversal is complete (spec 4.3 rule 4). */
  nextCursor: string | null;
}

/**
 * The calls API as the sync engine uses it. Rejections are ConnectorErrors: InvalidCursorError when the
 * listing refused the cursor sent, SkippableError when a single call is refused for a reason of its own,
 * RetriableError / FatalError otherwise; the signal's reason when it aborts.
 */
export interface CallsApi {
  listPage(request: PageRequest, signal?: AbortSignal, hint?: RequestHint): Promise<ListedPage>;
  /** GET {callPath} mapped, or null when the API answers 404 or 410 (deleted since it was listed). */
  getCall(uid: string, signal?: AbortSignal, hint?: RequestHint): Promise<SingleCall | null>;
}

/** How the listing refused a cursor: the error code read at api.errorCodeField, if any, and the answer. */
export interface CursorRejection {
  apiCode: string | null;
  status: number;
  /** Named by api.invalidCursorStatuses / api.invalidCursorErrorCodes, rather than by the 4xx rule only. */
  recognised: boolean;
  /** "HTTP 400: <scrubbed body excerpt>". */
  detail: string;
}

/** The listing refused the cursor we sent (expired or invalid): restart the traversal from its watermark. */
export class InvalidCursorError extends RetriableError {
  declare readonly details: Record<string, unknown> & CursorRejection;

  constructor(rejection: CursorRejection) {
    super('API_INVALID_CURSOR', `the calls API rejected the cursor (${rejection.detail})`, {
      details: { ...rejection },
    });
  }
}

/** Everything one page produced, committed atomically (exactly-once) or records-then-offset (at-least-once). */
export interface PageCommit {
  locationUid: string;
  calls: readonly Call[];
  deadLetters: readonly DeadLetter[];
  /** The location's offset after this page; stored last (or in the same transaction). */
  offset: LocationOffset;
  /**
   * The offset the location knows to be stored (its last commit), against which a sink's read-back is
   * judged (commit-outcome.ts): a page whose `offset` equals it cannot be recognised in the offsets topic.
   * Unset: a stored value other than the page's own offset rejects the page.
   */
  committed?: LocationOffset;
  /** uids of calls the API reports gone, published as tombstones (kafka.tombstoneGoneCalls). */
  tombstones?: readonly string[];
  /** Where the page came from, for the records' source-metadata headers. */
  source?: PageSource;
  /**
   * The sink generation (RecordSink.generation) under which `committed` was read or last written. A
   * sink whose producer was initialised again since does not write the page: the new initialisation may
   * have settled a transaction or another writer may have written, so the page's base may be stale. It
   * reads the location's stored offset instead and answers by the rule (CommitOutcome).
   */
  generation?: number;
  /**
   * The signal this page completes (a backfill's merge, a reset's new offset): its `done` outcome is written with
   * the page, in its transaction (exactly once) or before its offset (at least once), so a crash leaves it
   * running and the offset says it was carried out (signal-steps-rule.ts), never done without its effect stored.
   */
  signalDone?: string;
}

/** The position a page was listed at: its traversal, the page number in it, and the request's since/cursor. */
export interface PageSource {
  traversalId: string;
  page: number;
  since: string | null;
  cursor: string | null;
  /** The backfill signal whose re-read the page is (a history lane it started); absent for every other page. */
  signal?: string;
}

/**
 * What became of a page (decided by the one rule, commit-outcome.ts):
 * - 'stored': its calls, dead letters and offset are durable in Kafka;
 * - 'rejected': none of it is visible to read_committed consumers (exactly-once mode) or its offset was not
 *   written (at-least-once mode): commit it again after a backoff (`reason` says why);
 * - 'superseded': the store holds `stored`, another writer's newer offset (one that has run since and is
 *   gone): the location continues from `stored`, not from the page's offset.
 * `generation`: the sink generation its store was read under; pages built on it carry it (PageCommit).
 */
export type CommitOutcome =
  | { kind: 'stored'; generation?: number }
  | { kind: 'rejected'; reason: RetriableError; generation?: number }
  | { kind: 'superseded'; stored: LocationOffset; reason: RetriableError; generation?: number };

/**
 * Where pages go. `commitPage` resolves to the page's outcome. It rejects only when the sink commits
 * nothing more: a FatalError (fenced by another instance, not permitted, a programmer error), or a
 * RetriableError when the sink is closing, closed or its partition was taken over (the location is being
 * dropped; the next owner reads what is stored), or the page could not be encoded (nothing written).
 */
export interface RecordSink {
  commitPage(commit: PageCommit): Promise<CommitOutcome>;
  /**
   * Optional: a number that grows each time the sink (re)initialises its producer. A page built under an
   * older one is not written: the sink reads its location's stored offset and answers by the rule
   * (rejected, with the current generation, when nothing moved; superseded otherwise).
   */
  generation?(): number;
  close(): Promise<void>;
}

/** What a signal about one location asks of the instance that runs it (signal-steps-rule.ts carries it out). */
export interface LocationSignal {
  /** The signal's id: the outcome to complete, and the header a backfill's re-read records carry. */
  id: string;
  location: string;
  /** When the owner accepted it (RFC 3339): a backfill without `until` reads up to this instant. */
  acceptedAt: string;
  /** backfill: the range to read again (null since: the location's start; null until: `acceptedAt`). */
  backfill?: { since: string | null; until: string | null };
  /** reset: the offset's new since (null: the location starts over, from its start). */
  reset?: { to: string | null };
}

/**
 * The signals accepted for locations and not yet carried out, as the orchestrator of each location asks for
 * them (location-sync.ts, at the start of each page): the runtime keeps them (runtime/signals/signal-queue.ts),
 * fed by the signal answerer, across the LocationSyncs a location gets (a handover, a resume).
 */
export interface LocationSignals {
  /** The location's signals to carry out, in the order they were sent; empty when none. */
  pending(locationUid: string): readonly LocationSignal[];
  /**
   * The signal needs nothing more of this location now. `complete`: its effect is stored in full (a reset's
   * offset, a backfill's merge, or found so in the offset), and its `done` outcome is written unless the sink
   * wrote it with the page (exactly once); false: it goes on as the location's history lane, whose merge
   * completes it.
   */
  settled(locationUid: string, signalId: string, complete: boolean): void;
}

/** Reads stored offsets. Writes go through RecordSink, so that they can share the page's transaction. */
export interface OffsetStore {
  /** Reads the offsets topic to its end; returns the latest offset per location uid (tombstones removed). */
  loadAll(): Promise<Map<string, LocationOffset>>;
}

/** A counter the core increments; `labels` are the metric's label values. */
export interface SyncCounter<Label extends string> {
  inc(labels: Record<Label, string>, value?: number): void;
  /**
   * The counter of one set of label values, for a caller that increments it on every poll: looked up once
   * instead of hashing the labels per increment.
   */
  labels(labels: Record<Label, string>): { inc(value?: number): void };
}

/**
 * What the sync core reports, and nothing else: the Prometheus registry (metrics/metrics.ts) implements
 * it; tests may count in memory. Label values for a location come from `location(uid)` (which may fold
 * locations beyond a cardinality cap into one label).
 */
export interface SyncMetrics {
  /** The `location` label value for a location uid. */
  location(locationUid: string): string;
  readonly pagesFetched: SyncCounter<'location'>;
  readonly recordsPublished: SyncCounter<'location'>;
  readonly recordsSkipped: SyncCounter<'location' | 'reason'>;
  readonly recordsRedacted: SyncCounter<'location'>;
  readonly recordsBelowWatermark: SyncCounter<'location'>;
  readonly recordsUnenriched: SyncCounter<'location' | 'reason'>;
  readonly deadLetters: SyncCounter<'code'>;
  readonly cursorRestarts: SyncCounter<'location' | 'reason'>;
  readonly locationErrors: SyncCounter<'location' | 'code'>;
  readonly traversalDuration: { observe(seconds: number): void };
  /** Gauge locations_stopped{code}: reset, then set for each code. */
  readonly locationsStopped: {
    reset(): void;
    set(labels: Record<'code', string>, value: number): void;
  };
  /** Records committed by a split location's history lane (history-lane.ts); also counted in recordsPublished. */
  readonly backfillRecords: SyncCounter<'location'>;
  /** A split location's backfill moved (after each history page, and at the split), or merged (null). */
  observeBackfill(locationUid: string, figures: BackfillFigures | null): void;
  /** The highest updatedAt published for a location (ms since epoch). */
  observeHighWater(locationUid: string, updatedAt: number): void;
  /** A traversal of the location completed at `at` (ms since epoch). */
  observeTraversalSuccess(locationUid: string, at: number): void;
  /**
   * A page of `lane` was stored (committed): the updatedAt (ms since epoch) of each call it published. The
   * delay of each, from its updatedAt to now, is the connector's freshness figure.
   */
  observeCommittedChanges(lane: 'live' | 'history', updatedAtMs: readonly number[]): void;
  /** A live poll of the location that began at `startedAt` (ms since epoch) completed: its lag restarts from it. */
  observeCaughtUp(locationUid: string, startedAt: number): void;
  /** Gauge poll_effective_interval_seconds: the interval the scheduler polls at now (stretch-rule.ts). */
  readonly pollEffectiveInterval: { set(seconds: number): void };
}

/**
 * The rate-limit scopes the locations' requests go to (an OAuth grant each, or one for all), as the scheduler
 * needs them: which scope a location's requests use, whether a scope is held (it waits out a
 * Retry-After or a spent quota, so a page of its locations would only wait), and the request rate it allows
 * now. The API adapter implements it (api/rate-limit/scope-holds.ts); without one, every location shares one
 * scope that is never held and whose rate is unknown.
 */
export interface RateLimitScopes {
  scopeOf(locationUid: string): string;
  /** When the scope's hold ends (ms since epoch), or null when it is not held. */
  heldUntil(scope: string): number | null;
  /** Requests per second the scope allows now (learned or announced); null when unknown. */
  ratePerSecond(scope: string): number | null;
  /**
   * Live requests the scope granted per second over its recent window (the limiter's own count); null or
   * absent when not measured.
   */
  liveGrantedPerSecond?(scope: string): number | null;
}
