/**
 * The orchestrator of ONE location: a thin holder of its committed offset, its position and the traversal
 * in progress, which sequences the parts, none of which calls another:
 * - the listing (CallsApi, whose items arrive mapped) and the paginator rules (traversal.ts);
 * - the page pipeline (page-pipeline.ts: map, boundary dedupe, enrich, privacy, tombstones, dead letters);
 * - the read-ahead (read-ahead.ts): while a page that is not the traversal's last commits, the next one is
 *   listed and prepared from the offset it will store; only that work is done ahead, the cursor-loop check,
 *   the metrics and the commit happen when the page's turn comes, in order;
 * - the commit driver (commit-driver.ts): RecordSink.commitPage and its typed outcome, decided by the one rule
 *   of commit-outcome.ts (this reads no offsets): 'stored' moves the location on, 'superseded' adopts the
 *   offset the store holds, 'rejected' is committed again there until the retry policy is spent;
 * - the counters (location-counters.ts): metrics, totals and the traversal's counts.
 *
 * Unit of work: one page (`runPage`), so the scheduler can interleave locations fairly and bound memory
 * by pages in flight; the scheduler runs a location's pages until its traversal completes.
 *
 * Lanes (lanes.ts, with `settings.lanes`): on its first page in this process a location with no stored
 * offset, or one far behind, is split at T0 (an order=desc listing: newestUpdatedAt). Its live lane (the
 * offset's own fields) is then polled like a caught-up location and its history lane (`offset.history`)
 * reads up to T0 in the turns the scheduler gives it (`runPage(signal, 'history')`). Both lanes are run
 * here, one page at a time, each with its own traversal and read-ahead; every commit writes both (the
 * other lane as it stands), so no lane's commit overwrites the other's progress. A history page drops the
 * calls the live lane published at a newer version since it was listed (LiveWindow).
 *
 * Offsets: `committed` is what the sink last stored (the starting offset comes from the OffsetStore);
 * `position` is where the next page starts, equal to `committed` except right after an invalid cursor
 * (restart from the watermark, not yet committed: a crash then simply resumes from `committed`).
 * An idle page (nothing to publish, offset equal to `committed`, see `isIdle`) is not committed at all.
 *
 * Failure handling:
 * - InvalidCursorError (any 4xx but 401/403/429 to a request with a cursor, whatever its body, including
 *   the stored cursor of a crashed or old run): restart from since = watermark with the boundary kept,
 *   counted by reason. The restarted first page carries no cursor, so if it fails the same way the
 *   client's error is fatal. More than MAX_RESTARTS_WITHOUT_PROGRESS restarts that publish nothing fail
 *   the traversal (retriable).
 * - Enrichment never costs a record (enricher.ts): a call that cannot be enriched for a reason of its own
 *   is published unenriched and redacted, counted; a transient failure fails the page before the commit.
 * - A repeated cursor: FatalError CURSOR_LOOP (the scheduler stops this location only).
 * - A commit that fails for good (its retries spent, or the sink writes nothing more) propagates; the next
 *   page starts again from `committed`.
 * - An abort of `signal` before the commit abandons the page (nothing committed); once commitPage has
 *   started it is awaited, the sink bounding its own time.
 * Every other error propagates to the scheduler, which decides (retry later or stop the location).
 */
import { randomUUID } from 'node:crypto';
import { ConnectorError, FatalError, RetriableError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { BackoffPolicy } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';
import { CommitDriver } from './commit-driver.js';
import { CursorLoopDetector } from './cursor-loop.js';
import type { Enricher } from './enricher.js';
import type { BoundaryFingerprints } from './fingerprint.js';
import { LocationCounters, type LocationTotals, type TraversalCounts } from './location-counters.js';
import {
  backfillProgress,
  historyPositionMs,
  laneBoundaryBounds,
  liveLane,
  LiveWindow,
  needsSplitCheck,
  offsetAfterPage,
  splitOffset,
  type BackfillFigures,
  type BackfillProgress,
  type Lane,
  type LaneSettings,
} from './lanes.js';
import type { LaneOffset, LocationOffset, PrivacyPolicy } from './model.js';
import {
  assemblePage,
  pageTally,
  preparePage,
  type AssembledPage,
  type PipelineSettings,
  type PreparedPage,
} from './page-pipeline.js';
import {
  InvalidCursorError,
  type CallsApi,
  type ListedPage,
  type PageCommit,
  type PageRequest,
  type RecordSink,
  type RequestHint,
  type SyncMetrics,
} from './ports.js';
import { requestHint } from './priority.js';
import { ReadAhead, type AheadState } from './read-ahead.js';
import {
  nextPageRequest,
  restartAfterInvalidCursor,
  sameOffset,
  type TraversalSettings,
} from './traversal.js';

export { emptyTotals, type LocationTotals } from './location-counters.js';

export const MAX_RESTARTS_WITHOUT_PROGRESS = 5;

const LIVE_HINT: RequestHint = Object.freeze({ priority: 'live' });
const BACKFILL_HINT: RequestHint = Object.freeze({ priority: 'backfill' });
/** The split check's order=desc pages: items per page, and pages followed past empty ones (newestUpdatedAt). */
const SPLIT_CHECK_LIMIT = 10;
const SPLIT_CHECK_PAGES = 5;

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
}

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
}

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

interface TraversalState extends TraversalCounts {
  id: string;
  lane: Lane;
  startedAt: number;
  detector: CursorLoopDetector;
  restartsWithoutProgress: number;
  /** This traversal's logger (location and traversal bound), made on first use. */
  readonly log: Logger;
}

export class LocationSync {
  readonly locationUid: string;
  private committed: LocationOffset;
  private position: LocationOffset;
  private readonly traversals: Record<Lane, TraversalState | null> = { live: null, history: null };
  private busy = false;
  private readonly traversalSettings: TraversalSettings;
  private readonly pipeline: PipelineSettings;
  private readonly readAheads: Record<Lane, ReadAhead> = { live: new ReadAhead(), history: new ReadAhead() };
  /** What the live lane published while a history page is in flight (lanes.ts). */
  private readonly liveWindow = new LiveWindow();
  /** The live window's mark of the history page in its turn, null when none is. */
  private historyMark: number | null = null;
  /** Whether this process decided the split already (needsSplitCheck, the order=desc request). */
  private splitDecided = false;
  /** The backfill as this process saw it, while the location is split (metrics, status). */
  private backfillFigures: BackfillFigures | null = null;
  private readonly commits: CommitDriver;
  private readonly counters: LocationCounters;

  constructor(private readonly options: LocationSyncOptions) {
    const { settings } = options;
    if (settings.boundaryCap < 1) throw new RangeError('boundaryCap must be >= 1');
    this.locationUid = options.locationUid;
    this.committed = options.startOffset;
    this.position = options.startOffset;
    this.traversalSettings = {
      locationUid: options.locationUid,
      pageSize: settings.pageSize,
      startSince: settings.startSince,
      boundaryCap: settings.boundaryCap,
    };
    this.pipeline = {
      locationUid: options.locationUid,
      boundaryCap: settings.boundaryCap,
      ...(settings.boundaryMaxBytes !== undefined && { boundaryMaxBytes: settings.boundaryMaxBytes }),
      privacy: settings.privacy,
      fingerprints: settings.fingerprints,
      ...(settings.tombstoneGone !== undefined && { tombstoneGone: settings.tombstoneGone }),
    };
    this.commits = new CommitDriver({
      sink: options.sink,
      retry: settings.commitRetry,
      clock: options.clock,
    });
    this.counters = new LocationCounters(options.metrics, options.locationUid);
    this.trackBackfill(0);
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
    const figures = this.backfillFigures;
    return figures === null ? null : { ...figures, ...backfillProgress(figures, this.options.clock.now()) };
  }

  /** Whether the location is split and its history lane has pages left to read (runPage(signal, 'history')). */
  get hasHistory(): boolean {
    return this.position.history !== undefined;
  }

  /**
   * The history lane's next page as read ahead (read-ahead.ts AheadState): 'none' when no page is read ahead
   * from the lane's position (prefetchHistory starts one), 'pending' while it is listed and its single calls
   * made, 'ready' once prepared (or failed). The scheduler gives history turns to ready locations, so a turn
   * holds the location, and its live poll, for a commit rather than for a page's single calls (issue 23).
   */
  historyAhead(): AheadState {
    const history = this.position.history;
    if (history === undefined) return { state: 'none' };
    return this.readAheads.history.stateFrom(history);
  }

  /**
   * Starts reading the history lane's next page ahead, from its position, unless one is read ahead already
   * or a page of this location is running (its commit starts the next one itself). Called by the scheduler
   * between turns; `signal` bounds it like a page's (a stop or a handover cancels it).
   */
  prefetchHistory(signal?: AbortSignal): void {
    if (this.busy || this.position.history === undefined) return;
    if (this.historyAhead().state !== 'none') return;
    this.startReadAhead('history', this.position, signal);
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
      if (!this.splitDecided) await this.decideSplit(signal);
      return await this.processPage(lane === 'history' && this.hasHistory ? 'history' : 'live', signal);
    } finally {
      this.busy = false;
      if (this.historyMark !== null) {
        this.historyMark = null;
        this.pruneLiveWindow();
      }
    }
  }

  /**
   * Splits the location when lanes.ts says so: an order=desc listing gives the API's newest updatedAt. The
   * split is committed with the location's next page (its offset then differs from the stored one); a crash
   * before that decides again.
   */
  private async decideSplit(signal?: AbortSignal): Promise<void> {
    const lanes = this.options.settings.lanes;
    if (lanes === undefined || !needsSplitCheck(this.position, lanes, this.options.clock.now())) {
      this.splitDecided = true;
      return;
    }
    let updatedAt: string | null;
    try {
      updatedAt = await this.newestUpdatedAt(signal);
    } catch (error) {
      // An API that refuses order=desc (the spec names it; an API we did not write may not take it) costs the
      // location its lanes, not its sync: it reads its history first, as before lanes. Transient failures
      // and aborts propagate (the check is made again on the next page).
      if (signal?.aborted === true || !(error instanceof ConnectorError) || error.retriable) throw error;
      this.splitDecided = true;
      this.options.logger.warn(
        { location: this.locationUid, code: error.code, err: error },
        'the split check (one order=desc listing request) was refused: this location is not split, its history is read before the present',
      );
      return;
    }
    const split = splitOffset(
      this.position,
      updatedAt,
      lanes,
      this.options.settings.startSince,
      this.pipeline,
    );
    this.splitDecided = true;
    if (split === null) {
      this.options.logger.debug(
        { location: this.locationUid, newest: updatedAt },
        'location not split: no call listed, a backlog under lanes.splitBacklogMs, or nothing before T0',
      );
      return;
    }
    this.readAheads.live.drop();
    this.position = split;
    this.trackBackfill(0);
    this.options.logger.info(
      {
        location: this.locationUid,
        until: split.history?.until,
        newest: updatedAt,
        historyFrom: split.history?.watermark ?? split.history?.since ?? this.options.settings.startSince,
      },
      'location split: the live lane polls from T0 (until), the history lane reads up to it behind',
    );
  }

  /**
   * The API's newest updatedAt for this location (the split check), null when it lists no call. An
   * order=desc listing of SPLIT_CHECK_LIMIT items: the first that has an updatedAt (a call, or an item that
   * failed to parse but gave its position) is the newest. The API omits calls it cannot represent (spec 4.3
   * rule 6) and leaves their page short with a cursor set, so an empty page with a cursor is followed, up to
   * SPLIT_CHECK_PAGES pages: reading it as "no call" would leave the location unsplit, its present waiting
   * behind its whole history. Past that, null (not split: correct, only slower).
   */
  private async newestUpdatedAt(signal?: AbortSignal): Promise<string | null> {
    let request: PageRequest = {
      kind: 'first',
      locationUid: this.locationUid,
      since: null,
      order: 'desc',
      limit: SPLIT_CHECK_LIMIT,
    };
    for (let page = 0; page < SPLIT_CHECK_PAGES; page++) {
      const listed: ListedPage = await this.options.api.listPage(request, signal, LIVE_HINT);
      for (const item of listed.items) {
        const updatedAt = item.ok ? item.call.updatedAt : (item.position?.updatedAt ?? null);
        if (updatedAt !== null) return updatedAt;
      }
      if (listed.nextCursor === null) return null;
      request = {
        kind: 'next',
        locationUid: this.locationUid,
        cursor: listed.nextCursor,
        limit: SPLIT_CHECK_LIMIT,
      };
    }
    return null;
  }

  /** The traversal settings of `lane`'s pages: history pages list `lanes.historyPageSize` items at most. */
  private traversalFor(lane: Lane): TraversalSettings {
    const historyPageSize = this.options.settings.lanes?.historyPageSize;
    if (lane === 'live' || historyPageSize === undefined) return this.traversalSettings;
    return {
      ...this.traversalSettings,
      pageSize: Math.min(this.traversalSettings.pageSize, historyPageSize),
    };
  }

  /** The position of `lane`: the live lane's fields, or the history lane. */
  private laneOffset(lane: Lane): LaneOffset {
    if (lane === 'live') return this.position;
    const history = this.position.history;
    if (history === undefined) throw new Error('a history page of a location that is not split');
    return history;
  }

  /** The pipeline of `lane`'s pages: a split location's lanes share the boundary bounds; history stops at T0. */
  private pipelineFor(lane: Lane): PipelineSettings {
    const history = this.position.history;
    if (history === undefined) return this.pipeline;
    const other = lane === 'live' ? history : liveLane(this.position);
    return {
      ...this.pipeline,
      ...laneBoundaryBounds(this.pipeline, other),
      ...(lane === 'history' && { until: history.until }),
    };
  }

  private async processPage(lane: Lane, signal?: AbortSignal): Promise<PageReport> {
    const traversal = this.traversals[lane] ?? this.beginTraversal(lane);
    const from = this.laneOffset(lane);
    const pipeline = this.pipelineFor(lane);
    const request = nextPageRequest(from, this.traversalFor(lane));
    if (request.kind === 'next') traversal.detector.sent(request.cursor);
    const ahead = this.readAheads[lane].take(this.aheadKey(lane), request);
    if (lane === 'history') this.historyMark = ahead?.mark ?? this.liveWindow.mark();
    const hint = this.requestHint(lane);
    let listed: ListedPage;
    try {
      listed = await (ahead?.listed ?? this.options.api.listPage(request, signal, hint));
    } catch (error) {
      if (error instanceof InvalidCursorError && request.kind === 'next')
        return this.restart(traversal, error);
      throw error;
    }
    this.counters.pageFetched(traversal);
    if (traversal.detector.isLoop(listed.nextCursor)) throw this.cursorLoop(traversal);
    const prepared = await (ahead?.prepared ??
      preparePage(from, listed, pipeline, this.options.enricher, signal, hint));
    const { kept, superseded } = this.withoutSupersededByLive(lane, prepared);
    const page = assemblePage(kept, pipeline);
    this.logPage(traversal, prepared, page);

    signal?.throwIfAborted();
    const { outcome } = prepared;
    const offset = offsetAfterPage(this.position, lane, outcome.offset, outcome.complete);
    const commit = this.pageCommit(traversal, request, from, offset, page);
    if (!(await this.commit(traversal, commit, outcome.complete, signal)))
      return { complete: false, published: 0, lane };
    this.committed = offset;
    this.position = offset;
    if (lane === 'live' && this.historyInFlight()) this.liveWindow.record(page.calls);
    if (lane === 'history') {
      if (page.calls.length > 0) this.counters.historyPublished(page.calls.length);
      this.trackBackfill(page.calls.length);
    }
    if (outcome.accepted.length > 0) traversal.restartsWithoutProgress = 0;
    if (lane === 'history' && this.options.logger.isLevelEnabled('debug'))
      traversal.log.debug(
        {
          since: from.since,
          resumedCursor: request.kind === 'next',
          listed: listed.items.length,
          published: page.calls.length,
          duplicates: outcome.duplicates.length,
          supersededByLive: superseded,
          leftToLive: prepared.leftToLive,
          watermark: outcome.offset.watermark,
          boundary: outcome.offset.boundary.length,
          complete: outcome.complete,
        },
        'history page committed',
      );
    this.counters.recordPage(traversal, pageTally(prepared, page, superseded), this.committed.watermark);
    if (outcome.complete) this.endTraversal(traversal);
    return { complete: outcome.complete, published: page.calls.length, lane };
  }

  /**
   * A history page without the calls the live lane published since its listing at a newer version (lanes.ts,
   * LiveWindow): publishing them would take their key back to an older version.
   */
  private withoutSupersededByLive(
    lane: Lane,
    prepared: PreparedPage,
  ): { kept: PreparedPage; superseded: number } {
    const mark = this.historyMark;
    if (lane !== 'history' || mark === null || this.liveWindow.size === 0)
      return { kept: prepared, superseded: 0 };
    const enriched = prepared.enriched.filter(
      (item) => !this.liveWindow.supersededByLive(item.listed.uid, item.listed.updatedAt, mark),
    );
    return { kept: { ...prepared, enriched }, superseded: prepared.enriched.length - enriched.length };
  }

  /** Whether a history page is listed and not yet committed (in its turn, or read ahead). */
  private historyInFlight(): boolean {
    return this.historyMark !== null || this.readAheads.history.mark !== undefined;
  }

  /** Forgets what the live window held for history pages no longer in flight. */
  private pruneLiveWindow(): void {
    const ahead = this.readAheads.history.mark;
    this.liveWindow.prune(ahead ?? null);
  }

  /**
   * What a lane's read-ahead is keyed by (ReadAhead.take compares it by identity): the live lane's, the whole
   * offset (any commit moves it); the history lane's, its own object, which a live commit keeps.
   */
  private aheadKey(lane: Lane): LocationOffset {
    return lane === 'live' ? this.position : (this.position.history ?? this.position);
  }

  /**
   * Commits the page unless it is idle, reading the next one ahead meanwhile unless it is the traversal's
   * `last`. Resolves true when its offset is stored, false when superseded: the location then continues from
   * the offset the store holds (another writer's), and the page read ahead, which started elsewhere, is dropped.
   */
  private async commit(
    traversal: TraversalState,
    commit: PageCommit,
    last: boolean,
    signal?: AbortSignal,
  ): Promise<boolean> {
    if (this.isIdle(commit)) return true;
    const { lane } = traversal;
    if (!last) this.startReadAhead(lane, commit.offset, signal);
    let result;
    try {
      result = await this.commits.commit(commit, () => traversal.log, signal);
    } catch (error) {
      this.readAheads[lane].drop();
      throw error;
    }
    if (result.kind === 'stored') return true;
    traversal.log.warn(
      {
        lane,
        watermark: result.stored.watermark,
        historyWatermark: result.stored.history?.watermark ?? null,
        split: result.stored.history !== undefined,
      },
      "the page's commit found another writer's offset stored: continuing from it",
    );
    this.readAheads.live.drop();
    this.readAheads.history.drop();
    this.committed = result.stored;
    this.position = result.stored;
    traversal.detector.reset();
    // Another writer's offset: a history lane it no longer holds has no traversal left.
    if (result.stored.history === undefined) this.traversals.history = null;
    this.trackBackfill(0);
    return false;
  }

  /**
   * Keeps the backfill figures (and the metrics' copy) in step with the position: a new history lane (or T0)
   * starts them, `records` more published by the history lane move them, a merge ends them.
   */
  private trackBackfill(records: number): void {
    const history = this.position.history;
    const { metrics } = this.options;
    if (history === undefined) {
      if (this.backfillFigures !== null) metrics.observeBackfill(this.locationUid, null);
      this.backfillFigures = null;
      return;
    }
    const positionMs = historyPositionMs(history);
    const untilMs = Date.parse(history.until);
    const known = this.backfillFigures;
    const started = known === null || known.untilMs !== untilMs;
    if (started) this.counters.historyPublished(0);
    this.backfillFigures = started
      ? { untilMs, positionMs, startedAtMs: this.options.clock.now(), startPositionMs: positionMs, records }
      : { ...known, positionMs, records: known.records + records };
    metrics.observeBackfill(this.locationUid, this.backfillFigures);
  }

  private pageCommit(
    traversal: TraversalState,
    request: PageRequest,
    from: LaneOffset,
    offset: LocationOffset,
    page: AssembledPage,
  ): PageCommit {
    return {
      locationUid: this.locationUid,
      calls: page.calls,
      deadLetters: page.deadLetters,
      offset,
      committed: this.committed,
      ...(page.tombstones.length > 0 && { tombstones: page.tombstones }),
      source: {
        traversalId: traversal.id,
        page: traversal.pages,
        since: from.since,
        cursor: request.kind === 'next' ? request.cursor : null,
      },
    };
  }

  /** Lists and prepares `lane`'s page after `offset` (the offset the current page stores) while it commits. */
  private startReadAhead(lane: Lane, offset: LocationOffset, signal?: AbortSignal): void {
    const from: LaneOffset | undefined = lane === 'live' ? offset : offset.history;
    if (from === undefined) return;
    const request = nextPageRequest(from, this.traversalFor(lane));
    const hint = this.requestHint(lane);
    // The pipeline of the page after this one: its bounds are the other lane's as this commit leaves it.
    const pipeline = this.pipelineAfter(lane, offset);
    const mark = lane === 'history' ? this.liveWindow.mark() : undefined;
    this.readAheads[lane].start(
      lane === 'live' ? offset : (offset.history ?? offset),
      request,
      (aheadSignal) => {
        const listed = this.options.api.listPage(request, aheadSignal, hint);
        const prepared = listed.then((page) =>
          preparePage(from, page, pipeline, this.options.enricher, aheadSignal, hint),
        );
        return { listed, prepared, ...(mark !== undefined && { mark }) };
      },
      signal,
    );
  }

  /** pipelineFor(lane) as it will be once `offset` is the position. */
  private pipelineAfter(lane: Lane, offset: LocationOffset): PipelineSettings {
    const position = this.position;
    this.position = offset;
    try {
      return this.pipelineFor(lane);
    } finally {
      this.position = position;
    }
  }

  /**
   * The rate limiter's priority of `lane`'s requests: a split location's live lane is live and its history
   * backfill; a location that is not split is live once caught up (priority.ts).
   */
  private requestHint(lane: Lane): RequestHint {
    if (this.position.history !== undefined) return lane === 'live' ? LIVE_HINT : BACKFILL_HINT;
    return requestHint(this.totals.traversalsCompleted, this.position.since, this.options.clock.now());
  }

  private cursorLoop(traversal: TraversalState): FatalError {
    return new FatalError(
      'CURSOR_LOOP',
      `the calls API returned a cursor already followed in this traversal (location ${this.locationUid}); stopping this location`,
      { details: { locationUid: this.locationUid, traversal: traversal.id } },
    );
  }

  /**
   * The page's log lines: records listed below the watermark, tombstones, and (one line per page) the calls
   * published unenriched although enrichment is on, whose customer number the privacy policy redacted.
   */
  private logPage(traversal: TraversalState, prepared: PreparedPage, page: AssembledPage): void {
    const { belowWatermark } = prepared.outcome;
    if (belowWatermark.length > 0)
      traversal.log.warn(
        {
          count: belowWatermark.length,
          watermark: this.position.watermark,
          uids: belowWatermark.slice(0, 10).map((e) => e.uid),
        },
        'records older than the watermark were listed (the API broke its sort order); published them again rather than risk losing them',
      );
    for (const uid of page.tombstones)
      traversal.log.info({ uid }, 'call gone (GET answered not found): tombstone');
    if (page.unenrichedExamples.length > 0) {
      const onlyGone = page.unenriched.size === 1 && page.unenriched.has('gone');
      traversal.log[onlyGone ? 'info' : 'warn'](
        { counts: Object.fromEntries(page.unenriched), examples: page.unenrichedExamples },
        'calls published unenriched, customer number redacted (see examples for what the single-call API said)',
      );
    }
  }

  private beginTraversal(lane: Lane): TraversalState {
    const id = randomUUID().slice(0, 8);
    const { logger } = this.options;
    let log: Logger | undefined;
    const locationUid = this.locationUid;
    const state: TraversalState = {
      id,
      lane,
      startedAt: this.options.clock.now(),
      detector: new CursorLoopDetector(),
      restartsWithoutProgress: 0,
      pages: 0,
      published: 0,
      deadLettered: 0,
      deduplicated: 0,
      // Made on first use: an idle poll logs nothing at info, and a child logger per traversal was a
      // measurable share of its CPU (pino serialises the bindings when the child is made).
      get log() {
        return (log ??= logger.child({
          location: locationUid,
          traversal: id,
          ...(lane === 'history' && { lane }),
        }));
      },
    };
    // Debug: most traversals of a running connector are idle polls (one page, nothing new), and two info
    // lines each would be hundreds of lines a second at 10,000 locations. 'traversal complete' says the rest.
    const from = this.laneOffset(lane);
    if (logger.isLevelEnabled('debug'))
      state.log.debug({ since: from.since, resumingCursor: from.cursor !== null }, 'traversal started');
    this.traversals[lane] = state;
    return state;
  }

  private endTraversal(traversal: TraversalState): void {
    const now = this.options.clock.now();
    this.traversals[traversal.lane] = null;
    if (traversal.lane === 'history') {
      traversal.log.info(
        {
          pages: traversal.pages,
          published: traversal.published,
          deduplicated: traversal.deduplicated,
          durationMs: now - traversal.startedAt,
        },
        'history lane reached T0: the lanes merged',
      );
      return;
    }
    this.counters.traversalCompleted(traversal.startedAt, now, this.position.history === undefined);
    const idle = traversal.pages === 1 && traversal.published === 0 && traversal.deadLettered === 0;
    const level = idle ? 'debug' : 'info';
    if (this.options.logger.isLevelEnabled(level))
      traversal.log[level](
        {
          pages: traversal.pages,
          published: traversal.published,
          deadLettered: traversal.deadLettered,
          deduplicated: traversal.deduplicated,
          since: this.committed.since,
          durationMs: now - traversal.startedAt,
        },
        'traversal complete',
      );
  }

  private restart(traversal: TraversalState, error: InvalidCursorError): PageReport {
    const { lane } = traversal;
    traversal.restartsWithoutProgress += 1;
    if (traversal.restartsWithoutProgress > MAX_RESTARTS_WITHOUT_PROGRESS) {
      this.traversals[lane] = null;
      throw new RetriableError(
        'CURSOR_RESTARTS_EXHAUSTED',
        `the calls API rejected ${traversal.restartsWithoutProgress} cursors in a row without progress (location ${this.locationUid}); trying again later`,
        { cause: error },
      );
    }
    const history = this.position.history;
    this.position =
      lane === 'live' || history === undefined
        ? restartAfterInvalidCursor(this.position)
        : { ...this.position, history: { ...restartAfterInvalidCursor(history), until: history.until } };
    traversal.detector.reset();
    const from = this.laneOffset(lane);
    const { apiCode, status, recognised, detail } = error.details;
    this.counters.cursorRestarted(recognised);
    traversal.log.warn(
      {
        apiCode,
        status,
        recognised,
        api: detail,
        since: from.since,
        boundary: from.boundary.length,
      },
      `cursor rejected (${detail}): restarting from the watermark`,
    );
    return { complete: false, published: 0, lane };
  }

  /**
   * An idle page needs no commit: it publishes, dead-letters and tombstones nothing, and leaves the offset
   * equal to what is known to be stored. Polling quiet locations then costs the HTTP request only, not a
   * Kafka transaction and an offset record per poll. A commit is still made whenever the store may differ
   * from `committed`: when `position` moved away from it uncommitted (a cursor rejected and cleared, which
   * the store must forget, or a cursor to clear at the traversal's end).
   */
  private isIdle(commit: PageCommit): boolean {
    return (
      commit.calls.length === 0 &&
      commit.deadLetters.length === 0 &&
      (commit.tombstones?.length ?? 0) === 0 &&
      sameOffset(this.position, this.committed) &&
      sameOffset(commit.offset, this.committed)
    );
  }
}
