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
import { FatalError, RetriableError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { BackoffPolicy } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';
import { CommitDriver } from './commit-driver.js';
import { CursorLoopDetector } from './cursor-loop.js';
import type { Enricher } from './enricher.js';
import type { BoundaryFingerprints } from './fingerprint.js';
import { LocationCounters, type LocationTotals, type TraversalCounts } from './location-counters.js';
import type { LocationOffset, PrivacyPolicy } from './model.js';
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
import { ReadAhead } from './read-ahead.js';
import {
  nextPageRequest,
  restartAfterInvalidCursor,
  sameOffset,
  type TraversalSettings,
} from './traversal.js';

export { emptyTotals, type LocationTotals } from './location-counters.js';

export const MAX_RESTARTS_WITHOUT_PROGRESS = 5;

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
  /** The traversal ended with this page (nextCursor null). */
  complete: boolean;
  /** Calls published by this page (0 when the cursor was rejected and the traversal restarted). */
  published: number;
}

interface TraversalState extends TraversalCounts {
  id: string;
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
  private traversal: TraversalState | null = null;
  private busy = false;
  private readonly traversalSettings: TraversalSettings;
  private readonly pipeline: PipelineSettings;
  private readonly readAhead = new ReadAhead();
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
  }

  /** The offset last committed by the sink (or the starting offset). */
  get offset(): LocationOffset {
    return this.committed;
  }

  /** The id of the traversal in progress, null between traversals. */
  get traversalId(): string | null {
    return this.traversal?.id ?? null;
  }

  /** Counts since this LocationSync was created, for the status view. */
  get totals(): LocationTotals {
    return this.counters.totals;
  }

  /**
   * Fetches, processes and commits one page of the current traversal (starting one if none is open).
   * Not re-entrant: one page at a time per location (the scheduler guarantees it).
   */
  async runPage(signal?: AbortSignal): Promise<PageReport> {
    if (this.busy) throw new Error(`LocationSync.runPage re-entered for location ${this.locationUid}`);
    this.busy = true;
    try {
      return await this.processPage(signal);
    } finally {
      this.busy = false;
    }
  }

  private async processPage(signal?: AbortSignal): Promise<PageReport> {
    const traversal = this.traversal ?? this.beginTraversal();
    const request = nextPageRequest(this.position, this.traversalSettings);
    if (request.kind === 'next') traversal.detector.sent(request.cursor);
    const ahead = this.readAhead.take(this.position, request);
    const hint = this.requestHint();
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
      preparePage(this.position, listed, this.pipeline, this.options.enricher, signal, hint));
    const page = assemblePage(prepared, this.pipeline);
    this.logPage(traversal, prepared, page);

    signal?.throwIfAborted();
    const { outcome } = prepared;
    const commit = this.pageCommit(traversal, request, prepared, page);
    if (!(await this.commit(traversal, commit, outcome.complete, signal)))
      return { complete: false, published: 0 };
    this.committed = outcome.offset;
    this.position = outcome.offset;
    if (outcome.accepted.length > 0) traversal.restartsWithoutProgress = 0;
    this.counters.recordPage(traversal, pageTally(prepared, page), this.committed.watermark);
    if (outcome.complete) this.endTraversal(traversal);
    return { complete: outcome.complete, published: page.calls.length };
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
    if (!last) this.startReadAhead(commit.offset, signal);
    let result;
    try {
      result = await this.commits.commit(commit, () => traversal.log, signal);
    } catch (error) {
      this.readAhead.drop();
      throw error;
    }
    if (result.kind === 'stored') return true;
    this.readAhead.drop();
    this.committed = result.stored;
    this.position = result.stored;
    traversal.detector.reset();
    return false;
  }

  private pageCommit(
    traversal: TraversalState,
    request: PageRequest,
    prepared: PreparedPage,
    page: AssembledPage,
  ): PageCommit {
    return {
      locationUid: this.locationUid,
      calls: page.calls,
      deadLetters: page.deadLetters,
      offset: prepared.outcome.offset,
      committed: this.committed,
      ...(page.tombstones.length > 0 && { tombstones: page.tombstones }),
      source: {
        traversalId: traversal.id,
        page: traversal.pages,
        since: this.position.since,
        cursor: request.kind === 'next' ? request.cursor : null,
      },
    };
  }

  /** Lists and prepares the page after `from` while the current page commits. */
  private startReadAhead(from: LocationOffset, signal?: AbortSignal): void {
    const request = nextPageRequest(from, this.traversalSettings);
    const hint = this.requestHint();
    this.readAhead.start(
      from,
      request,
      (aheadSignal) => {
        const listed = this.options.api.listPage(request, aheadSignal, hint);
        const prepared = listed.then((page) =>
          preparePage(from, page, this.pipeline, this.options.enricher, aheadSignal, hint),
        );
        return { listed, prepared };
      },
      signal,
    );
  }

  /** The rate limiter's priority of this location's requests (priority.ts). */
  private requestHint(): RequestHint {
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

  private beginTraversal(): TraversalState {
    const id = randomUUID().slice(0, 8);
    const { logger } = this.options;
    let log: Logger | undefined;
    const locationUid = this.locationUid;
    const state: TraversalState = {
      id,
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
        return (log ??= logger.child({ location: locationUid, traversal: id }));
      },
    };
    // Debug: most traversals of a running connector are idle polls (one page, nothing new), and two info
    // lines each would be hundreds of lines a second at 10,000 locations. 'traversal complete' says the rest.
    if (logger.isLevelEnabled('debug'))
      state.log.debug(
        { since: this.position.since, resumingCursor: this.position.cursor !== null },
        'traversal started',
      );
    this.traversal = state;
    return state;
  }

  private endTraversal(traversal: TraversalState): void {
    const now = this.options.clock.now();
    this.counters.traversalCompleted(traversal.startedAt, now);
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
    this.traversal = null;
  }

  private restart(traversal: TraversalState, error: InvalidCursorError): PageReport {
    traversal.restartsWithoutProgress += 1;
    if (traversal.restartsWithoutProgress > MAX_RESTARTS_WITHOUT_PROGRESS) {
      this.traversal = null;
      throw new RetriableError(
        'CURSOR_RESTARTS_EXHAUSTED',
        `the calls API rejected ${traversal.restartsWithoutProgress} cursors in a row without progress (location ${this.locationUid}); trying again later`,
        { cause: error },
      );
    }
    this.position = restartAfterInvalidCursor(this.position);
    traversal.detector.reset();
    const { apiCode, status, recognised, detail } = error.details;
    this.counters.cursorRestarted(recognised);
    traversal.log.warn(
      {
        apiCode,
        status,
        recognised,
        api: detail,
        since: this.position.since,
        boundary: this.position.boundary.length,
      },
      `cursor rejected (${detail}): restarting from the watermark`,
    );
    return { complete: false, published: 0 };
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
