/**
 * The orchestrator of ONE location: it holds its committed offset, its position and the traversal in
 * progress of each lane, and sequences the parts, none of which calls another:
 * - the listing (CallsApi, whose items arrive mapped) and the paginator rules (traversal.ts);
 * - the page pipeline (page-pipeline.ts: map, boundary dedupe, enrich, privacy, tombstones, dead letters);
 * - how a lane's page is read, listed as the lane lists and prepared at its priority (page-reading.ts);
 * - the read-ahead (read-ahead.ts): while a page that is not the traversal's last commits, the next one is
 *   listed and prepared from the offset it will store; only that work is done ahead, the cursor-loop check,
 *   the metrics and the commit happen when the page's turn comes, in order;
 * - the commit driver (commit-driver.ts): RecordSink.commitPage and its typed outcome, decided by the one rule
 *   of commit-outcome.ts (this reads no offsets): 'stored' moves the location on, 'superseded' adopts the
 *   offset the store holds, 'rejected' is committed again there until the retry policy is spent;
 * - the page's commit and the idle rule (page-commit.ts);
 * - the counters (location-counters.ts): metrics, totals and the traversal's counts;
 * - the signal steps (signal-steps.ts, over the rule of signal-steps-rule.ts): the signals accepted for the
 *   location, each a reset's offset or a backfill's history lane committed before the page (a backfill's merge
 *   completes it, page-commit.ts).
 *
 * Unit of work: one page (`runPage`), so the scheduler can interleave locations fairly and bound memory
 * by pages in flight; the scheduler runs a location's pages until its traversal completes.
 *
 * Lanes (lanes.ts, with `settings.lanes`): on its first page in this process a location with no stored
 * offset, or one far behind, is split at T0 (split-check.ts). Its live lane (the offset's own fields) is then
 * polled like a caught-up location and its history lane (`offset.history`) reads up to T0 in the turns the
 * scheduler gives it (`runPage(signal, 'history')`). Both lanes are run here, one page at a time, each with
 * its own traversal and read-ahead; every commit writes both (the other lane as it stands), so no lane's
 * commit overwrites the other's progress. What a lane adds to the page path is its role (lane-role.ts):
 * live-lane.ts, and history-lane.ts, which keeps the history lane's own state (the split, the live window
 * that drops calls the live lane published newer, the backfill figures, the prefetch).
 *
 * Offsets: `committed` is what the sink last stored (the starting offset comes from the OffsetStore);
 * `position` is where the next page starts, equal to `committed` except right after an invalid cursor
 * (restart from the watermark, not yet committed: a crash then simply resumes from `committed`) and within
 * an idle traversal of several pages (its cursors are not stored: a crash lists those pages again).
 * An idle page (nothing to publish, nothing but an unstored cursor moved, page-commit.ts isIdlePage) is not
 * committed.
 *
 * Failure handling:
 * - InvalidCursorError (any 4xx but 401/403/429 to a request with a cursor, whatever its body, including
 *   the stored cursor of a crashed or old run): restart from since = watermark with the boundary kept,
 *   counted by reason. The restarted first page carries no cursor, so if it fails the same way the
 *   client's error is fatal. More than MAX_RESTARTS_WITHOUT_PROGRESS restarts that publish nothing fail
 *   the traversal (retriable).
 * - A page's single-call answers must be within privacy.maxEnrichmentAgeMs of its commit (page-reading.ts):
 *   a history page read ahead is kept so in the background (read-ahead.ts KeepFresh), and one its turn finds
 *   too old is handed back to be refreshed there, so the turn never holds the location's live poll for single
 *   calls; a live page is refreshed in its own turn; an answer still too old at commit is dropped (redacted).
 * - Enrichment never costs a record (enricher.ts): a call that cannot be enriched for a reason of its own
 *   is published unenriched and redacted, counted; a transient failure fails the page before the commit.
 * - A repeated cursor: FatalError CURSOR_LOOP (the scheduler stops this location only).
 * - A commit that fails for good (its retries spent, or the sink writes nothing more) propagates; the next
 *   page starts again from `committed`.
 * - An abort of `signal` before the commit abandons the page (nothing committed); once commitPage has
 *   started it is awaited, the sink bounding its own time.
 * Every other error propagates to the scheduler, which decides (retry later or stop the location).
 */
import type { Logger } from '../../logging/logger.js';
import type { BackoffPolicy } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import type { BackfillFigures, BackfillProgress } from '../lanes/backfill.js';
import { CommitDriver } from './commit-driver.js';
import { HistoryLane } from '../lanes/history-lane.js';
import type { LaneRole } from '../lanes/lane-role.js';
import type { Enricher } from './enricher.js';
import type { BoundaryFingerprints } from './fingerprint.js';
import {
  DEFAULT_GROUP_PIECE_SIZE,
  hasLane,
  laneOffset,
  lanePipeline,
  laneTraversal,
  offsetAfterPage,
  readAheadKey,
  restartLane,
  type Lane,
  type LaneSettings,
} from '../lanes/lanes.js';
import { LiveLane } from '../lanes/live-lane.js';
import { LocationCounters, type LocationTotals } from './location-counters.js';
import { logCursorRestart, logPage, logSuperseded, logTraversalStarted } from './location-log.js';
import type { LocationOffset, PrivacyPolicy, RequestHint } from '../model.js';
import { isIdlePage, offsetKept, pageCommit } from './page-commit.js';
import { assemblePage, pageTally, type PipelineSettings } from './page-pipeline.js';
import {
  committable,
  keepingFresh,
  pageReader,
  withoutExpiredAnswers,
  withRecentAnswers,
  type RecentAnswers,
} from './page-reading.js';
import {
  InvalidCursorError,
  type CallsApi,
  type ListedPage,
  type LocationSignals,
  type PageCommit,
  type RecordSink,
  type SyncMetrics,
} from '../ports.js';
import { readingAhead, type AheadState } from './read-ahead.js';
import { SignalSteps } from './signal-steps.js';
import { nextPageRequest, type TraversalSettings } from './traversal.js';
import { TraversalRun } from './traversal-run.js';

export { emptyTotals, type LocationTotals } from './location-counters.js';

/** LocationSync's settings (sync.*, privacy.*, kafka.tombstoneGoneCalls, lanes). */
export interface LocationSyncSettings {
  pageSize: number;
  /** `since` of a location's first traversal when it has no stored offset; null = from the beginning. */
  startSince: string | null;
  boundaryCap: number;
  /**
   * Bytes the boundary may take in the stored offset (traversal.ts, boundaryEntryBytes): the offsets
   * topic's max.message.bytes less the rest of the record. Unset: no byte bound (tests).
   */
  boundaryMaxBytes?: number;
  privacy: PrivacyPolicy;
  /** Keyed fingerprints of boundary records (fingerprint.ts: why keyed); one per connector, same on every instance. */
  fingerprints: BoundaryFingerprints;
  /** Backoff and attempts for rejected commits (the API retry policy's numbers serve well). */
  commitRetry: Readonly<BackoffPolicy>;
  /** A call GET reports gone: a tombstone instead of the unenriched record (kafka.tombstoneGoneCalls). */
  tombstoneGone?: boolean;
  /** Live and history lanes (lanes.ts); unset: never split. */
  lanes?: LaneSettings;
  /**
   * The age (ms, on the clock) past which a prepared page's single-call answers are asked again before it
   * commits (privacy.maxEnrichmentAgeMs; Enricher.refresh); unset: no bound (tests).
   */
  maxEnrichmentAgeMs?: number;
}

/** LocationSync's collaborators and settings. */
export interface LocationSyncOptions {
  locationUid: string;
  startOffset: LocationOffset;
  api: Pick<CallsApi, 'listPage'>;
  enricher: Enricher;
  sink: RecordSink;
  metrics: SyncMetrics;
  logger: Logger;
  settings: LocationSyncSettings;
  clock: Clock;
  /** The signals accepted for the location (backfill, reset), carried out before its pages; none when unset. */
  signals?: LocationSignals;
}

/** What one page did (runPage's answer). */
export interface PageReport {
  /**
   * The lane's traversal ended with this page (nextCursor null); for a history page, the history lane
   * reached T0 and the lanes merged.
   */
  complete: boolean;
  /** Calls published by this page (0 when the cursor was rejected and the traversal restarted). */
  published: number;
  /** The lane the page belonged to. */
  lane: Lane;
}

/**
 * Times a history page too old at its turn is handed back to its read-ahead to be refreshed; past it the turn
 * refreshes it itself (its single calls cannot be asked within the bound in the background).
 */
const MAX_HAND_BACKS = 3;

export class LocationSync {
  readonly locationUid: string;
  /** The enricher, the clock and privacy.maxEnrichmentAgeMs: how pages' answers are kept recent. */
  private readonly answers: RecentAnswers;
  private committed: LocationOffset;
  private position: LocationOffset;
  private readonly traversals: Record<Lane, TraversalRun | null> = { live: null, history: null };
  private busy = false;
  private readonly traversalSettings: TraversalSettings;
  private readonly pipeline: PipelineSettings;
  /** The history lane's own state (history-lane.ts); also the history lane's role. */
  private readonly history: HistoryLane;
  private readonly roles: Record<Lane, LaneRole>;
  private readonly commits: CommitDriver;
  private readonly counters: LocationCounters;
  private readonly signalSteps: SignalSteps;

  constructor(private readonly options: LocationSyncOptions) {
    const { settings, locationUid, api, metrics, logger, clock } = options;
    if (settings.boundaryCap < 1) throw new RangeError('boundaryCap must be >= 1');
    this.locationUid = locationUid;
    this.committed = options.startOffset;
    this.position = options.startOffset;
    this.traversalSettings = {
      locationUid,
      pageSize: settings.pageSize,
      startSince: settings.startSince,
      boundaryCap: settings.boundaryCap,
    };
    this.pipeline = {
      locationUid,
      boundaryCap: settings.boundaryCap,
      ...(settings.boundaryMaxBytes !== undefined && { boundaryMaxBytes: settings.boundaryMaxBytes }),
      privacy: settings.privacy,
      fingerprints: settings.fingerprints,
      ...(settings.tombstoneGone !== undefined && { tombstoneGone: settings.tombstoneGone }),
    };
    this.commits = new CommitDriver({ sink: options.sink, retry: settings.commitRetry, clock });
    this.answers = { enricher: options.enricher, clock, maxEnrichmentAgeMs: settings.maxEnrichmentAgeMs };
    const counters = new LocationCounters(metrics, locationUid);
    this.counters = counters;
    this.history = new HistoryLane({
      locationUid,
      api,
      lanes: settings.lanes,
      startSince: settings.startSince,
      bounds: this.pipeline,
      clock,
      logger,
      counters,
      metrics,
      keepFresh: keepingFresh(this.answers, () => this.hint(this.history)),
    });
    const groupPieceSize = settings.lanes?.groupPieceSize ?? DEFAULT_GROUP_PIECE_SIZE;
    const live = new LiveLane({ listener: this.history, groupPieceSize, counters, logger, clock });
    this.roles = { live, history: this.history };
    this.history.track(this.position, 0);
    this.signalSteps = new SignalSteps({
      locationUid,
      signals: options.signals,
      startSince: settings.startSince,
      logger,
    });
  }

  /** The offset last committed by the sink (or the starting offset). */
  get offset(): LocationOffset {
    return this.committed;
  }

  /** The id of the traversal in progress (the live lane's, else the history lane's), null between traversals. */
  get traversalId(): string | null {
    return this.traversals.live?.id ?? this.traversals.history?.id ?? null;
  }

  /** The backfill of a split location as this process saw it, with its progress now; null when not split. */
  get backfill(): (BackfillFigures & BackfillProgress) | null {
    return this.history.backfill(this.options.clock.now());
  }

  /** Whether the location is split and its history lane has pages left to read (runPage(signal, 'history')). */
  get hasHistory(): boolean {
    return this.position.history !== undefined;
  }

  /**
   * The history lane's next page as read ahead (read-ahead.ts AheadState): 'none' when no page is read ahead
   * from the lane's position (prefetchHistory starts one), 'pending' while it is listed and its single calls
   * made, 'ready' once prepared (or failed). The scheduler gives history turns to ready locations, so a turn
   * holds the location, and its live poll, for a commit rather than for a page's single calls.
   */
  historyAhead(): AheadState {
    return this.history.ahead(this.position);
  }

  /**
   * Starts reading the history lane's next page ahead, from its position, unless one is read ahead already
   * or a page of this location is running (its commit starts the next one itself). Called by the scheduler
   * between turns; `signal` bounds it like a page's (a stop or a handover cancels it).
   */
  prefetchHistory(signal?: AbortSignal): void {
    if (this.busy || this.position.history === undefined) return;
    if (this.historyAhead().state !== 'none') return;
    this.startReadAhead(this.history, this.position, signal);
  }

  /** Counts since this LocationSync was created, for the status view. */
  get totals(): LocationTotals {
    return this.counters.totals;
  }

  /**
   * Fetches, processes and commits one page of the current traversal (starting one if none is open).
   * Not re-entrant: one page at a time per location (the scheduler guarantees it).
   */
  async runPage(signal?: AbortSignal, lane: Lane = 'live'): Promise<PageReport> {
    if (this.busy) throw new Error(`LocationSync.runPage re-entered for location ${this.locationUid}`);
    this.busy = true;
    try {
      if (!this.history.splitDecided) await this.decideSplit(signal);
      await this.carryOutSignals(signal);
      return await this.processPage(
        this.roles[lane === 'history' && this.hasHistory ? 'history' : 'live'],
        signal,
      );
    } finally {
      this.busy = false;
      this.history.pageEnded();
    }
  }

  /** Splits the location when its split check says so (history-lane.ts); the live lane then starts at T0. */
  private async decideSplit(signal?: AbortSignal): Promise<void> {
    const split = await this.history.split(this.position, signal);
    if (split === null) return;
    this.roles.live.readAhead.drop();
    this.position = split;
  }

  /**
   * Carries out the location's pending signals before its page, in order: each commit the signal steps give
   * (signal-steps.ts) is committed as an offset with no records, and the location moves to it. Stops when no
   * signal is to be committed now, or when a commit found another writer's offset (adopted: the next page asks
   * again).
   */
  private async carryOutSignals(abort?: AbortSignal): Promise<void> {
    for (;;) {
      const step = this.signalSteps.next(this.position, this.committed);
      if (step === null) return;
      abort?.throwIfAborted();
      const result = await this.commits.commit(step.commit, () => step.log, abort);
      if (result.kind !== 'stored') {
        this.adopt(result.stored, null);
        return;
      }
      this.moveTo(step.commit.offset, step.reset);
      this.signalSteps.stored(step);
    }
  }

  private async processPage(role: LaneRole, signal?: AbortSignal): Promise<PageReport> {
    const { lane } = role;
    const traversal = this.traversals[lane] ?? this.beginTraversal(lane);
    const from = laneOffset(this.position, lane);
    const pipeline = lanePipeline(this.pipeline, this.position, lane);
    const request = nextPageRequest(from, this.traversalFor(lane));
    if (request.kind === 'next') traversal.detector.sent(request.cursor);
    const ahead = role.readAhead.take(readAheadKey(this.position, lane), request);
    role.pageBegins(ahead);
    const reader = pageReader(this.options, role, from, request, pipeline, this.hint(role));
    let listed: ListedPage;
    try {
      listed = await (ahead?.listed ?? reader.list(signal));
    } catch (error) {
      // A first page raises it only from a cursor its lane followed at once (group-read.ts).
      if (error instanceof InvalidCursorError) return this.restart(traversal, error);
      throw error;
    }
    this.counters.pageFetched(traversal);
    if (traversal.detector.isLoop(listed.nextCursor)) throw traversal.cursorLoop();
    const { clock, settings } = this.options;
    let prepared = await (ahead?.prepared ?? reader.prepare(listed, signal));
    if (!committable(prepared, clock.now(), settings.maxEnrichmentAgeMs)) {
      const handedBack = ahead?.handedBack ?? 0;
      if (role.readAhead.refreshes && handedBack < MAX_HAND_BACKS) {
        // Refreshed in the background: the turn ends, the location's live poll and nudges go on.
        const mark = ahead?.mark ?? role.aheadMark();
        const page = { listed, prepared, handedBack, ...(mark !== undefined && { mark }) };
        role.readAhead.resume(readAheadKey(this.position, lane), request, page, signal);
        return { complete: false, published: 0, lane };
      }
      prepared = await withRecentAnswers(this.answers, prepared, () => this.hint(role), signal);
    }
    prepared = withoutExpiredAnswers(prepared, clock.now(), settings.maxEnrichmentAgeMs);
    const { kept, superseded } = role.keep(prepared);
    const page = assemblePage(kept, pipeline);
    logPage(traversal, prepared, page, this.position.watermark);

    signal?.throwIfAborted();
    const { outcome } = prepared;
    const after = offsetAfterPage(this.position, lane, outcome.offset, outcome.complete);
    // A backfill's history lane: its records name the signal, and its merge completes it.
    const backfill = lane === 'history' ? this.position.history?.signal : undefined;
    const origin = {
      traversalId: traversal.id,
      page: traversal.pages,
      request,
      from,
      ...(backfill !== undefined && { signal: backfill }),
    };
    const completes = outcome.complete ? backfill : undefined;
    const commit = pageCommit(this.locationUid, origin, page, after, this.committed, completes);
    const stored = await this.commit(role, traversal, commit, outcome.complete, signal);
    if (stored === 'superseded') return { complete: false, published: 0, lane };
    const offset = offsetKept(stored, after, this.committed);
    if (stored === 'stored') this.committed = offset;
    if (completes !== undefined) this.signalSteps.merged(completes);
    this.position = offset;
    role.committed({ from, request, listed, prepared, page, superseded }, traversal, offset);
    if (outcome.accepted.length > 0) traversal.progressed();
    this.counters.recordPage(traversal, pageTally(prepared, page, superseded), offset.watermark);
    if (outcome.complete) this.endTraversal(role, traversal);
    return { complete: outcome.complete, published: page.calls.length, lane };
  }

  /** Lists and prepares `role`'s page after `offset` (the offset the current page stores) while it commits. */
  private startReadAhead(role: LaneRole, offset: LocationOffset, signal?: AbortSignal): void {
    const { lane } = role;
    if (!hasLane(offset, lane)) return;
    const from = laneOffset(offset, lane);
    const request = nextPageRequest(from, this.traversalFor(lane));
    // The pipeline of the page after this one: its bounds are the other lane's as this commit leaves it.
    const reader = pageReader(
      this.options,
      role,
      from,
      request,
      lanePipeline(this.pipeline, offset, lane),
      this.hint(role),
    );
    const read = readingAhead(reader, role.aheadMark());
    role.readAhead.start(readAheadKey(offset, lane), request, read, signal);
  }

  /**
   * Commits the page unless it is idle, reading the next one ahead meanwhile unless it is the traversal's
   * `last`. Resolves 'stored' when its offset is stored, 'idle' when it needed no commit (the store keeps
   * `committed`), 'superseded' when another writer's offset was found: the location then continues from that
   * offset, and the page read ahead, which started elsewhere, is dropped.
   */
  private async commit(
    role: LaneRole,
    traversal: TraversalRun,
    commit: PageCommit,
    last: boolean,
    signal?: AbortSignal,
  ): Promise<'stored' | 'idle' | 'superseded'> {
    if (isIdlePage(commit, this.position, this.committed)) return 'idle';
    if (!last) this.startReadAhead(role, commit.offset, signal);
    let result;
    try {
      result = await this.commits.commit(commit, () => traversal.log, signal);
    } catch (error) {
      role.readAhead.drop();
      throw error;
    }
    if (result.kind === 'stored') return 'stored';
    logSuperseded(traversal, result.stored);
    this.adopt(result.stored, traversal);
    return 'superseded';
  }

  /** Continues from `stored`, another writer's offset found by a commit (of `traversal`, or of a signal). */
  private adopt(stored: LocationOffset, traversal: TraversalRun | null): void {
    this.roles.live.readAhead.drop();
    this.roles.history.readAhead.drop();
    this.committed = stored;
    this.position = stored;
    traversal?.detector.reset();
    // Another writer's offset: a history lane it no longer holds has no traversal left.
    if (stored.history === undefined) this.traversals.history = null;
    this.history.track(stored, 0);
  }

  /**
   * Continues from `offset`, a signal's, just stored: what was read ahead started elsewhere, the history lane (new,
   * or gone) starts its traversal afresh, and a reset starts the live lane's afresh too and has the split decided
   * again (a reset far back reads its backlog as a history lane, the present first, as at a start).
   */
  private moveTo(offset: LocationOffset, reset: boolean): void {
    this.roles.live.readAhead.drop();
    this.roles.history.readAhead.drop();
    this.committed = offset;
    this.position = offset;
    this.traversals.history = null;
    if (reset) {
      this.traversals.live = null;
      this.history.offsetReplaced();
    }
    this.history.track(offset, 0);
  }

  /** The traversal settings of `lane`'s pages (lanes.ts laneTraversal). */
  private traversalFor(lane: Lane): TraversalSettings {
    return laneTraversal(this.traversalSettings, lane, this.options.settings.lanes?.historyPageSize);
  }

  /** The rate limiter's priority of `role`'s requests now (priority.ts). */
  private hint(role: LaneRole): RequestHint {
    return role.hint(this.position, this.totals.traversalsCompleted);
  }

  private beginTraversal(lane: Lane): TraversalRun {
    const { logger, clock } = this.options;
    const traversal = new TraversalRun(this.locationUid, lane, clock.now(), logger);
    logTraversalStarted(logger, traversal, laneOffset(this.position, lane));
    this.traversals[lane] = traversal;
    return traversal;
  }

  private endTraversal(role: LaneRole, traversal: TraversalRun): void {
    this.traversals[traversal.lane] = null;
    role.traversalEnded(traversal, this.options.clock.now(), this.committed);
  }

  /** The listing rejected the traversal's cursor: its lane restarts from the watermark, or gives up for now. */
  private restart(traversal: TraversalRun, error: InvalidCursorError): PageReport {
    const { lane } = traversal;
    const exhausted = traversal.cursorRejected(error);
    if (exhausted !== null) {
      this.traversals[lane] = null;
      throw exhausted;
    }
    this.position = restartLane(this.position, lane);
    this.counters.cursorRestarted(error.details.recognised);
    logCursorRestart(traversal, error.details, laneOffset(this.position, lane));
    return { complete: false, published: 0, lane };
  }
}
